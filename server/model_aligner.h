// ModelAligner: forced alignment with one served version of a CMU Sphinx
// model: the engine's SphinxAligner (kernels/hmm/sphinx_aligner.h) over the
// daemon's scoring backend, the model's front end for audio, and the
// engine's errors turned into what an Align client is told
// (proto/gmmscore/v1/scorer.proto).
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ModelAligner> aligner,
//                        ModelAligner::Create(model_dir, dict, backend.get(), {}));
//   GMM_RETURN_IF_ERROR(aligner->CheckWords(words));      // before queueing
//   std::vector<absl::StatusOr<Alignment>> out = aligner->Align(batch);  // AlignScheduler
//
// The model is read a second time for the aligner (the served, prepared copy
// scores all senones; the aligner scores only those of each utterance's
// graph), so an aligning model holds its host form twice.
//
// Thread safety: Align from one thread at a time (AlignScheduler keeps to
// that); everything else is const and thread-safe, also beside Align.
#ifndef GMMSCORE_SERVER_MODEL_ALIGNER_H_
#define GMMSCORE_SERVER_MODEL_ALIGNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/wav_reader.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

struct ModelAlignerOptions {
  // Threads of the aligner's graph building and Viterbi; 0: all cores.
  int threads = 0;
  // Where senones are scored and Viterbi runs (kernels/hmm/align_engine.h);
  // empty: the host engine over the daemon's backend given to Create.
  AlignEngineFactory engine;
};

class ModelAligner {
 public:
  // Reads the Sphinx model in `model_dir`, `dictionary` and the model's
  // noisedict and feat.params; `backend` scores the senones and must outlive
  // the aligner. Errors: the readers' (NOT_FOUND for a missing dictionary,
  // INVALID_ARGUMENT for a malformed one, naming the file and line), and
  // the front end's for a feat.params it cannot use.
  static absl::StatusOr<std::unique_ptr<ModelAligner>> Create(const std::string& model_dir,
                                                              const std::string& dictionary,
                                                              ScoringBackend* backend,
                                                              const ModelAlignerOptions& options);

  ModelAligner(const ModelAligner&) = delete;
  ModelAligner& operator=(const ModelAligner&) = delete;

  // OK, or INVALID_ARGUMENT for an empty transcript or naming the first
  // word (and its 1-based position) that is not in the dictionary.
  absl::Status CheckWords(absl::Span<const std::string> words) const;

  // The model's features of `audio` (frames x feature_dim()); `name` names
  // it in errors. INVALID_ARGUMENT when its sample rate is not sample_rate().
  // Reentrant.
  absl::StatusOr<FloatMatrix> ComputeFeatures(const PcmAudio& audio, const std::string& name) const;

  // One alignment per utterance, each with its own status, in the codes of
  // the Align RPC (ClientAlignStatus). Features must have feature_dim()
  // columns and finite values (the caller checks; the engine checks again).
  std::vector<absl::StatusOr<Alignment>> Align(absl::Span<const AlignInput> batch);

  const std::string& dictionary() const { return dictionary_; }
  int feature_dim() const { return aligner_->feature_dim(); }
  double frame_seconds() const { return aligner_->frame_seconds(); }
  // Hz: the model's -samprate.
  int sample_rate() const { return static_cast<int>(pipeline_.front_end.sample_rate); }
  // Audio samples per frame (sample_rate() x frame_seconds()), for limits.
  double samples_per_frame() const { return pipeline_.front_end.sample_rate * frame_seconds(); }

 private:
  ModelAligner(std::unique_ptr<SphinxAligner> aligner, FeaturePipeline pipeline, std::string dictionary)
      : aligner_(std::move(aligner)), pipeline_(std::move(pipeline)), dictionary_(std::move(dictionary)) {}

  const std::unique_ptr<SphinxAligner> aligner_;
  const FeaturePipeline pipeline_;
  const std::string dictionary_;
};

// The engine's status of one utterance as the Align RPC reports it: a word
// not in the dictionary (NOT_FOUND in the engine) is the client's input,
// INVALID_ARGUMENT; an utterance too short for its transcript or with no
// path through its graph (FAILED_PRECONDITION in the engine) is
// OUT_OF_RANGE, keeping FAILED_PRECONDITION for a model that cannot align
// at all. Other codes, and the messages, are kept.
absl::Status ClientAlignStatus(const absl::Status& engine);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MODEL_ALIGNER_H_
