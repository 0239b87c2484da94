// Launch of the wgmma tensor-core kernel (wgmma_loglik_kernel.cuh). Its
// translation unit is compiled for sm_90a alone (wgmma exists only there),
// so this is a library of its own; LaunchLoglik calls it for
// Algorithm::kWgmma and Algorithm::kWgmmaHalf.
#ifndef GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/device_model.h"

namespace gmmscore {

// Largest feature dimension the kernel takes ([1, y, y^2] in 12 k-steps of 8).
inline constexpr int kWgmmaMaxDim = 47;

// Scores `num_frames` frames (device memory, num_frames x dim) into
// `loglikes` (num_frames x num_states) on `stream`. FAILED_PRECONDITION on a
// device other than compute capability 9.0 (H100, H200), INVALID_ARGUMENT
// for dimensions above 47.
absl::Status LaunchWgmmaLoglik(const DeviceModel& model, const float* features, int64_t num_frames,
                               float* loglikes, cudaStream_t stream);

// The same in 3xFP16 (wgmma_half_loglik_kernel.cuh), over the model's
// binary16 layout, which DeviceModel::Upload makes on compute capability
// 9.0 devices only: FAILED_PRECONDITION elsewhere or for a model uploaded
// without it; INVALID_ARGUMENT for dimensions above 47.
absl::Status LaunchWgmmaHalfLoglik(const DeviceModel& model, const float* features, int64_t num_frames,
                                   float* loglikes, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_LAUNCH_H_
