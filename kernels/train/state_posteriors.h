// State posteriors for adaptation statistics: the StatsPairs (frame, state,
// weight) of a chunk, from its scores under the driving model (unsupervised,
// a softmax over the states scored, uniform prior) or from a decoder's
// posteriors, with silence left out as PosteriorPolicy says.
//
//   PosteriorPolicy policy{.silence_states = {0, 1, 2}};
//   std::vector<StatsPair> pairs = PairsFromScores(loglikes.view(), policy);
//   GMM_ASSIGN_OR_RETURN(pairs, PairsFromDecoder(decoder_pairs, frames, states, policy));
//
// A frame's silence mass is the sum of its posteriors on silence states.
// Silence states never contribute; a frame whose silence mass reaches
// silence_threshold (when > 0) contributes nothing at all. Posteriors from
// scores below min_posterior are dropped (not renormalised), and so are
// states 30 nats or more below the frame's best (posteriors under 1e-13,
// never computed: a 5000-state frame costs a pass of compares and a few
// exps); a model of one state (a UBM) gives every frame weight 1.
#ifndef GMMSCORE_KERNELS_TRAIN_STATE_POSTERIORS_H_
#define GMMSCORE_KERNELS_TRAIN_STATE_POSTERIORS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/score/posterior_policy.h"
#include "kernels/score/state_selection.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// INVALID_ARGUMENT naming the field: a silence state outside [0,
// num_states), a threshold outside [0, 1], min_posterior outside [0, 1).
absl::Status ValidatePosteriorPolicy(const PosteriorPolicy& policy, int num_states);

// From T x S log-likelihoods (rows whose best score is not finite give no
// pairs).
std::vector<StatsPair> PairsFromScores(ConstMatrixView loglikes, const PosteriorPolicy& policy);

// From a sparse answer's kept states (the softmax runs over those).
std::vector<StatsPair> PairsFromSparse(const SparseScores& scores, const PosteriorPolicy& policy);

// A decoder's pairs for a chunk of `num_frames` frames of a model of
// `num_states` states, filtered by the policy (min_posterior is not
// applied: the decoder chose them). INVALID_ARGUMENT naming the pair for a
// frame or state out of range or a weight that is negative or not finite.
absl::StatusOr<std::vector<StatsPair>> PairsFromDecoder(absl::Span<const StatsPair> pairs,
                                                        int64_t num_frames, int num_states,
                                                        const PosteriorPolicy& policy);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_STATE_POSTERIORS_H_
