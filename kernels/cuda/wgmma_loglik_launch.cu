#include "kernels/cuda/wgmma_loglik_launch.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/half_tc_layout.h"
#include "kernels/cuda/internal/dispatch_steps.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/wgmma_half_loglik_kernel.cuh"
#include "kernels/cuda/wgmma_loglik_kernel.cuh"
#include "kernels/cuda/internal/half_tensor_core_args.h"

namespace gmmscore {
namespace {

// Launches `kernel` (an instance of Policy) over the window in slices of
// at most kMaxFramesPerLaunch frames: 128-frame tiles along x, spans of
// whole ranges along y, enough blocks for kWgmmaWavesPerSm waves.
template <typename Policy, typename Args, typename MakeArgs>
absl::Status LaunchTiles(void (*kernel)(Args), MakeArgs make_args, int cols, const DeviceModel& model,
                         const float* features, int64_t num_frames, float* loglikes, int sms,
                         cudaStream_t stream) {
  const size_t shared_bytes = Policy::SharedBytes(cols);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), shared_bytes));
  for (int64_t first = 0; first < num_frames; first += Policy::kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, Policy::kMaxFramesPerLaunch);
    const int64_t tiles = (frames + Policy::kFrames - 1) / Policy::kFrames;
    const int64_t wanted =
        (static_cast<int64_t>(sms) * Policy::kMinBlocks * kWgmmaWavesPerSm + tiles - 1) / tiles;
    const int spans = static_cast<int>(
        std::clamp<int64_t>(wanted, 1, std::min<int64_t>(model.tc_ranges, kMaxGridDimYZ)));
    const Args args = make_args(model, features, first, frames, loglikes);
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(spans));
    kernel<<<grid, Policy::kThreads, shared_bytes, stream>>>(args);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch wgmma likelihood kernel");
  }
  return absl::OkStatus();
}

template <int kSteps>
absl::Status LaunchSteps(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, int sms, cudaStream_t stream) {
  using Policy = WgmmaPolicy<kSteps>;
  return LaunchTiles<Policy>(&WgmmaLoglikKernel<Policy>, MakeTensorCoreArgs, model.tc_cols, model, features,
                             num_frames, loglikes, sms, stream);
}

template <int kSteps>
absl::Status LaunchHalfSteps(const DeviceModel& model, const float* features, int64_t num_frames,
                             float* loglikes, int sms, cudaStream_t stream) {
  using Policy = WgmmaHalfPolicy<kSteps>;
  return LaunchTiles<Policy>(&WgmmaHalfLoglikKernel<Policy>, MakeHalfTensorCoreArgs, model.tc16_cols, model,
                             features, num_frames, loglikes, sms, stream);
}

absl::Status RequireHopper(const DeviceInfo& info) {
  if (info.has_wgmma()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "wgmma needs a compute capability 9.0 GPU (H100, H200); this one is ", info.major, ".", info.minor));
}

}  // namespace

absl::Status LaunchWgmmaLoglik(const DeviceModel& model, const float* features, int64_t num_frames,
                               float* loglikes, cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  GMM_RETURN_IF_ERROR(RequireHopper(info));
  return DispatchBySteps(
      model.tc_cols / 8,
      [&](auto steps) {
        return LaunchSteps<decltype(steps)::value>(model, features, num_frames, loglikes, info.sms,
                                                   stream);
      },
      absl::InvalidArgumentError(absl::StrCat("wgmma supports dimensions up to ", kWgmmaMaxDim,
                                              ", the model has ", model.dim)));
}

absl::Status LaunchWgmmaHalfLoglik(const DeviceModel& model, const float* features, int64_t num_frames,
                                   float* loglikes, cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  GMM_RETURN_IF_ERROR(RequireHopper(info));
  if (model.dim > kWgmmaMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("wgmma_f16 supports dimensions up to ", kWgmmaMaxDim, ", the model has ", model.dim));
  }
  if (model.tc16_cols == 0) {
    return absl::FailedPreconditionError("the model was uploaded without its binary16 tensor-core layout");
  }
  const int steps = model.tc16_cols / HalfTensorCoreLayout::kStep;
  auto launch = [&](auto steps_constant) {
    return LaunchHalfSteps<decltype(steps_constant)::value>(model, features, num_frames, loglikes, info.sms,
                                                            stream);
  };
  // One instance per step count of 16 columns (2D columns): 2 for D <= 16
  // (1 step for D <= 8 runs there, the columns past 2D being zero), up to 6
  // for D <= 47.
  switch (steps) {
    case 1:
    case 2: return launch(std::integral_constant<int, 2>{});
    case 3: return launch(std::integral_constant<int, 3>{});
    case 4: return launch(std::integral_constant<int, 4>{});
    case 5: return launch(std::integral_constant<int, 5>{});
    case 6: return launch(std::integral_constant<int, 6>{});
    default:
      return absl::InternalError(absl::StrCat("no wgmma_f16 instance for ", steps, " k-steps"));
  }
}

}  // namespace gmmscore
