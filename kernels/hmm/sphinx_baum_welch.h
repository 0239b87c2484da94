// Baum-Welch re-estimation of a CMU Sphinx model from transcribed speech,
// as SphinxTrain's bw + norm do it, on our kernels: each iteration compiles
// every transcript into its utterance graph (utterance_graph.h) with the
// current transition matrices, scores the senones (a ScoringBackend), runs
// the forward-backward over the batch (sparse_hmm_cpu.h), and re-estimates
//   - the transition matrices from the expected counts of each matrix entry
//     (rows without counts keep theirs; entries that are zero stay zero);
//   - the senone GMMs (means, variances, mixture weights) by the ML update
//     of kernels/train (MleUpdate) from statistics whose pairs are (frame,
//     senone, its posterior), on a StatsBackend.
// The result is the four parameter files (sphinx_model_writer.h writes
// them beside the model's mdef), which pocketsphinx loads.
//
//   GMM_ASSIGN_OR_RETURN(SphinxModelFiles out,
//       TrainSphinxModel(model_dir, lexicon, utterances, *scorer, *stats, {.iterations = 3}, on_iteration));
//
// Supported: continuous models with one feature stream (an4_ci_cont), all
// parameters. PTM and semi-continuous models share codebooks among senones
// (SphinxTrain re-estimates them with tied statistics); here only their
// transition matrices are re-estimated (update_gmm must be false), else
// UNIMPLEMENTED. Gaussians are never removed (every senone keeps the
// model's density count, as the file format needs); low-count ones keep
// their parameters.
//
// An utterance that cannot be aligned (a word not in the dictionary, too
// few frames, no path) is left out of that iteration and reported; the
// others go on. The log-likelihood an iteration reports is that of the
// model it started from: Baum-Welch never lowers it (up to float32
// rounding of scores).
#ifndef GMMSCORE_KERNELS_HMM_SPHINX_BAUM_WELCH_H_
#define GMMSCORE_KERNELS_HMM_SPHINX_BAUM_WELCH_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/hmm/sphinx_lexicon.h"
#include "kernels/hmm/sparse_hmm_reference.h"
#include "kernels/io/sphinx_model_writer.h"
#include "kernels/score/scoring_backend.h"
#include "kernels/train/mle_update.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// Forward-backward over a batch with state posteriors, one status per
// utterance (sparse_hmm_cpu.h's GraphForwardBackwardCpu with want_gamma).
using GraphPosteriorsBatch = std::function<std::vector<absl::StatusOr<GraphPosteriors>>(
    absl::Span<const HmmGraph* const>, absl::Span<const ConstMatrixView>)>;

struct SphinxBaumWelchOptions {
  int iterations = 1;
  UtteranceGraphOptions graph;
  bool update_transitions = true;
  bool update_gmm = true;
  // Sphinx's variance floor (pocketsphinx -varfloor) and no removal.
  MleOptions mle = {.min_variance = 1e-4, .remove_low_count_gaussians = false};
  int threads = 0;  // forward-backward threads; 0: hardware concurrency
  // Empty: the CPU recursions over `threads`; else e.g. the GPU's
  // (cuda/graph_posteriors_batch.h).
  GraphPosteriorsBatch forward_backward;
};

struct SphinxBaumWelchIteration {
  int iteration = 0;
  double loglike_per_frame = 0.0;  // of the model entering the iteration
  int64_t frames = 0;
  int utterances = 0;              // that took part
  std::vector<std::pair<int, std::string>> failed;  // index into the input, why
  double seconds = 0.0;
  MleReport update;
};

// INVALID_ARGUMENT for no utterances, iterations < 0, or features of
// another dimension; UNIMPLEMENTED as above; the readers' errors for the
// model; FAILED_PRECONDITION when no utterance can be aligned.
absl::StatusOr<SphinxModelFiles> TrainSphinxModel(
    const std::string& model_dir, const SphinxLexicon& lexicon, absl::Span<const AlignInput> utterances,
    ScoringBackend& scorer, StatsBackend& stats, const SphinxBaumWelchOptions& options,
    const std::function<void(const SphinxBaumWelchIteration&)>& on_iteration);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPHINX_BAUM_WELCH_H_
