// Forced alignment with a CMU Sphinx model: features and a transcript in,
// word and phone segments out. The pieces are kernels/hmm's: a graph per
// utterance (utterance_graph.h), its senones scored and Viterbi run over
// the batch by an AlignEngine (align_engine.h: a scoring backend and the
// CPU recursions by default, or the GPU's), and the segments read off the
// paths (alignment.h).
//
//   std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({});
//   GMM_ASSIGN_OR_RETURN(auto aligner, SphinxAligner::Create(model_dir, dict, cpu.get()));
//   std::vector<absl::StatusOr<Alignment>> out = aligner->Align({{"utt1", feats.view(), {"he", "was"}}});
//
// Each utterance succeeds or fails alone:
//   INVALID_ARGUMENT     no words, a dictionary phone the model lacks, features
//                        of the wrong dimension or not finite
//   NOT_FOUND            a word not in the dictionary (named)
//   FAILED_PRECONDITION  fewer frames than the transcript needs (both
//                        counts given), or no path through the graph
// Create fails with the readers' errors for the model, dictionary or noisedict.
// Thread safety: Align may be called from one thread at a time.
#ifndef GMMSCORE_KERNELS_HMM_SPHINX_ALIGNER_H_
#define GMMSCORE_KERNELS_HMM_SPHINX_ALIGNER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/core/thread_pool.h"
#include "kernels/hmm/align_engine.h"
#include "kernels/hmm/alignment.h"
#include "kernels/hmm/sphinx_lexicon.h"
#include "kernels/hmm/utterance_graph.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

struct AlignInput {
  std::string utterance;
  ConstMatrixView features;        // T x the model's dimension
  std::vector<std::string> words;  // the transcript
};

struct SphinxAlignerOptions {
  UtteranceGraphOptions graph;
  // Empty: the host engine over the `scorer` given to Create.
  AlignEngineFactory engine;
  int threads = 0;  // graph compilation and CPU recursions; 0: hardware concurrency
};

class SphinxAligner {
 public:
  // `scorer` scores the senones (host engine); it must outlive the aligner.
  // It may be null when options.engine is set.
  static absl::StatusOr<std::unique_ptr<SphinxAligner>> Create(const std::string& model_dir,
                                                               const std::string& dictionary, ScoringBackend* scorer,
                                                               SphinxAlignerOptions options = {});

  std::vector<absl::StatusOr<Alignment>> Align(absl::Span<const AlignInput> batch);

  const SphinxLexicon& lexicon() const { return lexicon_; }
  const TiedMixtureModel& model() const { return *model_; }  // the senones, in id order
  int feature_dim() const { return model_->dim(); }
  double frame_seconds() const { return frame_seconds_; }
  const AlignTiming& last_timing() const { return timing_; }
  std::string engine_name() const { return engine_->name(); }

 private:
  SphinxAligner(SphinxLexicon lexicon, std::shared_ptr<const TiedMixtureModel> model, double frame_seconds,
                SphinxAlignerOptions options);

  SphinxLexicon lexicon_;
  std::shared_ptr<const TiedMixtureModel> model_;
  SphinxAlignerOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<AlignEngine> engine_;
  double frame_seconds_ = 0.01;
  AlignTiming timing_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPHINX_ALIGNER_H_
