// The CUDA scoring backend: models resident on one device, scored by the
// fused kernel (8- or 16-frame tiles) or the cuBLAS two-kernel path.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> gpu, CreateCudaBackend(0));
//
// Concurrency: each Score call takes one of a few execution lanes (a CUDA
// stream with its own pinned staging buffers, device scratch and cuBLAS
// handle), so up to kLanes calls run at once and their copies in, kernels and
// copies out overlap; further callers wait for a free lane.
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Number of CUDA devices that answer (0 when there is no driver or device).
int CudaDeviceCount();

// UNAVAILABLE when `device` does not exist or no driver answers.
absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateCudaBackend(int device);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_
