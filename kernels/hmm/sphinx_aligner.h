// Forced alignment with a CMU Sphinx model: features and a transcript in,
// word and phone segments out. The pieces are kernels/hmm's: a graph per
// utterance (utterance_graph.h), its senones scored by a scoring backend
// (only those, through TiedMixtureModel::SubsetStates), Viterbi over the
// batch (the CPU recursions by default, or the caller's, e.g. CUDA's), and
// the segments read off the paths (alignment.h).
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

// Viterbi over a batch, one status per utterance (sparse_hmm_cpu.h's shape).
using GraphViterbiBatch = std::function<std::vector<absl::StatusOr<ViterbiPath>>(
    absl::Span<const HmmGraph* const>, absl::Span<const ConstMatrixView>)>;

struct SphinxAlignerOptions {
  UtteranceGraphOptions graph;
  GraphViterbiBatch viterbi;  // empty: GraphViterbiCpu over the aligner's pool
  int threads = 0;            // the CPU recursions' threads; 0: hardware concurrency
};

// Where an Align call spent its time, seconds.
struct AlignTiming {
  double graphs = 0, scoring = 0, viterbi = 0, segments = 0;
};

class SphinxAligner {
 public:
  // `scorer` scores the senones; it must outlive the aligner.
  static absl::StatusOr<std::unique_ptr<SphinxAligner>> Create(const std::string& model_dir,
                                                               const std::string& dictionary, ScoringBackend* scorer,
                                                               SphinxAlignerOptions options = {});

  std::vector<absl::StatusOr<Alignment>> Align(absl::Span<const AlignInput> batch);

  const SphinxLexicon& lexicon() const { return lexicon_; }
  const SphinxModel& model() const { return model_; }
  int feature_dim() const { return model_.model.dim(); }
  double frame_seconds() const { return frame_seconds_; }
  const AlignTiming& last_timing() const { return timing_; }

 private:
  SphinxAligner(SphinxLexicon lexicon, SphinxModel model, ScoringBackend* scorer, SphinxAlignerOptions options);
  // The emission scores of one utterance: T x graph.hmm.columns.size().
  absl::StatusOr<FloatMatrix> ScoreGraphSenones(const HmmGraph& graph, ConstMatrixView features);

  SphinxLexicon lexicon_;
  SphinxModel model_;
  ScoringBackend* scorer_;
  SphinxAlignerOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  double frame_seconds_ = 0.01;
  AlignTiming timing_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPHINX_ALIGNER_H_
