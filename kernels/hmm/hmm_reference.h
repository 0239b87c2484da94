// The float64 reference of the HMM recursions in log space: forward,
// backward, state posteriors gamma, expected transition counts (xi summed
// over time) and the total log-likelihood; Viterbi with traceback. Slow and
// obviously right; the fast CPU and CUDA paths are tested against it.
//
//   // emission log-likelihoods: frames x GMM states (a scoring backend's output)
//   GMM_ASSIGN_OR_RETURN(HmmPosteriors post, ForwardBackwardReference(hmm, loglikes));
//   GMM_ASSIGN_OR_RETURN(ViterbiPath best, ViterbiReference(hmm, loglikes));
//
// With b_t(j) = loglikes[t][emissions[j]]:
//   alpha_0(j) = log pi_j + b_0(j)
//   alpha_t(j) = logsumexp_i (alpha_{t-1}(i) + log a_ij) + b_t(j)
//   beta_{T-1}(i) = 0,  beta_t(i) = logsumexp_j (log a_ij + b_{t+1}(j) + beta_{t+1}(j))
//   log p(O) = logsumexp_j alpha_{T-1}(j),  gamma_t(i) = exp(alpha_t(i) + beta_t(i) - log p(O))
//   counts_ij = sum_t exp(alpha_t(i) + log a_ij + b_{t+1}(j) + beta_{t+1}(j) - log p(O))
// Viterbi breaks ties towards the lowest state index, at every step.
//
// Errors: INVALID_ARGUMENT for no frames, fewer loglike columns than the
// HMM's emissions need, or a NaN or +inf log-likelihood; FAILED_PRECONDITION
// when no state sequence has non-zero probability (forbidden transitions or
// -inf emissions everywhere on some frame).
#ifndef GMMSCORE_KERNELS_HMM_HMM_REFERENCE_H_
#define GMMSCORE_KERNELS_HMM_HMM_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"

namespace gmmscore {

struct HmmPosteriors {
  double log_likelihood = 0.0;
  std::vector<double> gamma;              // T x N
  std::vector<double> transition_counts;  // N x N
};

struct ViterbiPath {
  double log_likelihood = 0.0;  // of the best path
  std::vector<int32_t> states;  // T
};

absl::StatusOr<HmmPosteriors> ForwardBackwardReference(const DenseHmm& hmm, ConstMatrixView loglikes);
absl::StatusOr<ViterbiPath> ViterbiReference(const DenseHmm& hmm, ConstMatrixView loglikes);

// The checks both apply (see Errors above), before the "no path" one.
absl::Status ValidateEmissions(const DenseHmm& hmm, ConstMatrixView loglikes);
// ValidateEmissions for each of a batch, the error naming the utterance.
absl::Status ValidateUtterances(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_HMM_REFERENCE_H_
