// Forward-backward of a dense HMM over a batch of utterances on a CUDA
// device: the CPU path's algorithm (forward_backward_cpu.h) with each
// frame's products as cuBLAS DGEMMs over the utterances still running and
// the emissions, scaling and posteriors as small kernels, one CTA per
// utterance row.
//
//   GMM_ASSIGN_OR_RETURN(BatchPosteriors out, ForwardBackwardCuda(hmm, utterances));
//
// Float64 throughout, for the reason forward_backward_cpu.h gives (float32's
// range loses states); the H100's FP64 tensor cores run the DGEMMs.
// Transition counts come summed over the batch (one DGEMM per frame), which
// is what Baum-Welch needs; per-utterance counts are the CPU path's.
//
// Errors: those of ValidateEmissions, naming the utterance; FAILED_PRECONDITION
// when some utterance has no state sequence (the first one named);
// UNAVAILABLE without a device; RESOURCE_EXHAUSTED when the batch does not
// fit (about (sum of frames) x N x 16 bytes with posteriors).
#ifndef GMMSCORE_KERNELS_HMM_CUDA_FORWARD_BACKWARD_CUDA_H_
#define GMMSCORE_KERNELS_HMM_CUDA_FORWARD_BACKWARD_CUDA_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"

namespace gmmscore {

struct BatchPosteriors {
  std::vector<double> log_likelihoods;     // per utterance
  std::vector<std::vector<double>> gamma;  // per utterance, T x N (empty without want_gamma)
  std::vector<double> transition_counts;   // N x N, summed over the batch
  // The recursions alone on the device (CUDA events around the forward and
  // backward passes): without packing, uploading and copying back.
  double device_seconds = 0.0;
};

absl::StatusOr<BatchPosteriors> ForwardBackwardCuda(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances,
                                                    int device = 0, bool want_gamma = true);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_CUDA_FORWARD_BACKWARD_CUDA_H_
