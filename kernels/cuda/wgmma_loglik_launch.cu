#include "kernels/cuda/wgmma_loglik_launch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/internal/dispatch_steps.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/wgmma_loglik_kernel.cuh"

namespace gmmscore {
namespace {

template <int kSteps>
absl::Status LaunchSteps(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, int sms, cudaStream_t stream) {
  using Policy = WgmmaPolicy<kSteps>;
  const size_t shared_bytes = Policy::SharedBytes(model.tc_cols);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(
      reinterpret_cast<const void*>(&WgmmaLoglikKernel<Policy>), shared_bytes));
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const int64_t tiles = (frames + Policy::kFrames - 1) / Policy::kFrames;
    // Spans of whole ranges along y: enough blocks for kWavesPerSm waves.
    const int64_t wanted =
        (static_cast<int64_t>(sms) * Policy::kMinBlocks * kWgmmaWavesPerSm + tiles - 1) / tiles;
    const int spans = static_cast<int>(
        std::clamp<int64_t>(wanted, 1, std::min<int64_t>(model.tc_ranges, kMaxGridDimYZ)));
    const TensorCoreArgs args = MakeTensorCoreArgs(model, features, first, frames, loglikes);
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(spans));
    WgmmaLoglikKernel<Policy><<<grid, Policy::kThreads, shared_bytes, stream>>>(args);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch wgmma likelihood kernel");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchWgmmaLoglik(const DeviceModel& model, const float* features, int64_t num_frames,
                               float* loglikes, cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  if (info.major != 9 || info.minor != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "wgmma needs a compute capability 9.0 GPU (H100, H200); this one is ", info.major, ".",
        info.minor));
  }
  return DispatchBySteps(
      model.tc_cols / 8,
      [&](auto steps) {
        return LaunchSteps<decltype(steps)::value>(model, features, num_frames, loglikes, info.sms,
                                                   stream);
      },
      absl::InvalidArgumentError(absl::StrCat("wgmma supports dimensions up to ", kWgmmaMaxDim,
                                              ", the model has ", model.dim)));
}

}  // namespace gmmscore
