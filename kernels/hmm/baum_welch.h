// Baum-Welch training of a dense HMM with GMM emissions: each iteration
// scores every utterance with the current GMMs (a ScoringBackend), runs the
// batched forward-backward (forward_backward_cpu.h), and re-estimates
//   - the transitions from the expected transition counts (rows with no
//     count keep theirs) and the initial distribution from gamma_0;
//   - the GMMs by Kaldi's ML update (kernels/train/mle_update.h) from
//     statistics whose pairs are (frame, emission state, gamma_t(i)), on a
//     StatsBackend.
//
//   GMM_ASSIGN_OR_RETURN(HmmWithGmms trained,
//       TrainDenseHmm(*scorer, *stats, utterances, {hmm, gmm}, options, on_iteration));
//
// An utterance no state sequence can produce is left out of that iteration
// (counted, with its index in the report); the others go on. The
// log-likelihood an iteration reports is that of the model it started from:
// Baum-Welch never lowers it (up to the float32 rounding of the GMMs and of
// the scores).
#ifndef GMMSCORE_KERNELS_HMM_BAUM_WELCH_H_
#define GMMSCORE_KERNELS_HMM_BAUM_WELCH_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"
#include "kernels/score/scoring_backend.h"
#include "kernels/train/mle_update.h"
#include "kernels/train/natural_gmm.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

struct HmmWithGmms {
  DenseHmm hmm;
  NaturalGmm gmm;  // at least hmm.num_emission_states() states
};

struct BaumWelchOptions {
  int iterations = 10;
  bool update_transitions = true;
  bool update_gmm = true;
  MleOptions mle;
};

struct BaumWelchIteration {
  int iteration = 0;
  double loglike_per_frame = 0.0;  // of the model entering the iteration
  int64_t frames = 0;
  std::vector<int> skipped;        // utterances no state sequence produces
  double seconds = 0.0;
  MleReport update;
};

// INVALID_ARGUMENT for a GMM of too few states or another dimension than
// the features, no utterances, or iterations < 0; scoring and statistics
// errors as their backends report them; FAILED_PRECONDITION when no
// utterance can be produced at all.
absl::StatusOr<HmmWithGmms> TrainDenseHmm(ScoringBackend& scorer, StatsBackend& stats,
                                          const std::vector<FloatMatrix>& utterances, HmmWithGmms model,
                                          const BaumWelchOptions& options,
                                          const std::function<void(const BaumWelchIteration&)>& on_iteration);

// Log p(O) of each utterance under the HMM with these GMMs (FAILED_PRECONDITION
// entries for those no state sequence produces), scored on `scorer`.
absl::StatusOr<std::vector<absl::StatusOr<double>>> DenseHmmLogLikelihoods(
    ScoringBackend& scorer, const HmmWithGmms& model, const std::vector<FloatMatrix>& utterances);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_BAUM_WELCH_H_
