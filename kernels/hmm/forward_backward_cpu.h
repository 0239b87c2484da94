// Forward-backward of a dense HMM over a batch of utterances on the CPU
// with OpenBLAS: the fast path beside hmm_reference.h.
//
//   std::vector<ConstMatrixView> utterances = ...;   // each T_u x GMM states
//   GMM_ASSIGN_OR_RETURN(std::vector<HmmPosteriors> out, ForwardBackwardCpu(hmm, utterances));
//
// Scaled probabilities instead of logs, as the Baum-Welch paper and
// PyTorch's batched forward do: per frame, emissions become
// exp(loglik - frame max) and alpha is renormalised to sum 1, its scale and
// the max going into log p(O). Utterances run together, sorted by length,
// so that each frame is one GEMM of the active utterances' alphas (a prefix
// of the batch) by the N x N transition matrix; the backward pass is GEMMs
// too, the transition counts one rank-1 update per utterance and frame.
//
// Float64, not float32: a scaled forward vector spans its states'
// probabilities within a frame, and states 30 nats apart per frame pass
// float32's 1e-38 within a few frames; flushed to zero, a state that later
// carries the best path is lost (the tests saw log p(O) 47 nats off).
// Results match the reference to 1e-5 relative on log p(O) and 1e-5
// absolute on posteriors, returned in the utterances' order.
//
// Errors: those of ValidateEmissions for each utterance (naming it), and
// FAILED_PRECONDITION naming the first utterance no state sequence can
// produce (a frame where every reachable state's emission is -inf or the
// scaled forward underflows to 0).
#ifndef GMMSCORE_KERNELS_HMM_FORWARD_BACKWARD_CPU_H_
#define GMMSCORE_KERNELS_HMM_FORWARD_BACKWARD_CPU_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"
#include "kernels/hmm/hmm_reference.h"

namespace gmmscore {

absl::StatusOr<std::vector<HmmPosteriors>> ForwardBackwardCpu(const DenseHmm& hmm,
                                                              absl::Span<const ConstMatrixView> utterances);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_FORWARD_BACKWARD_CPU_H_
