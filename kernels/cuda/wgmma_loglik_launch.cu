#include "kernels/cuda/wgmma_loglik_launch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/wgmma_loglik_kernel.cuh"

namespace gmmscore {
namespace {

// Waves of blocks the span count aims at: Policy::kMinBlocks blocks are
// resident per SM, and a few waves even out spans of unequal length without
// re-running the A prologue (features into fragments) too often.
constexpr int kWavesPerSm = 3;

template <int kSteps>
absl::Status LaunchSteps(const DeviceModel& model, const float* features, int64_t num_frames,
                         float* loglikes, int sms, cudaStream_t stream) {
  using Policy = WgmmaPolicy<kSteps>;
  const size_t shared_bytes = Policy::SharedBytes(model.tc_cols);
  GMM_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(WgmmaLoglikKernel<Policy>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(shared_bytes)),
                           "raise wgmma kernel shared memory");
  constexpr int64_t kMaxFramesPerLaunch = 1LL << 24;
  for (int64_t first = 0; first < num_frames; first += kMaxFramesPerLaunch) {
    const int64_t frames = std::min(num_frames - first, kMaxFramesPerLaunch);
    const int64_t tiles = (frames + Policy::kFrames - 1) / Policy::kFrames;
    // Spans of whole ranges along y: enough blocks for kWavesPerSm waves.
    const int64_t wanted = (static_cast<int64_t>(sms) * Policy::kMinBlocks * kWavesPerSm + tiles - 1) / tiles;
    const int spans = static_cast<int>(std::clamp<int64_t>(wanted, 1, std::min(model.tc_ranges, 65535)));
    WgmmaArgs args{};
    args.big = model.tc_big.data();
    args.small = model.tc_small.data();
    args.row_group_state = model.tc_row_group_state.data();
    args.range_begin = model.tc_range_begin.data();
    args.num_ranges = model.tc_ranges;
    args.center = model.center.data();
    args.features = features + first * model.dim;
    args.num_frames = frames;
    args.dim = model.dim;
    args.cols = model.tc_cols;
    args.num_states = model.num_states;
    args.loglikes = loglikes + first * model.num_states;
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
  int device = 0, major = 0, minor = 0, sms = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "get device");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                           "compute capability");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                           "compute capability");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                           "multiprocessor count");
  if (major != 9 || minor != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "wgmma needs a compute capability 9.0 GPU (H100, H200); this one is ", major, ".", minor));
  }
  const int steps = model.tc_cols / 8;
  if (steps <= 4) return LaunchSteps<4>(model, features, num_frames, loglikes, sms, stream);
  if (steps <= 6) return LaunchSteps<6>(model, features, num_frames, loglikes, sms, stream);
  if (steps <= 8) return LaunchSteps<8>(model, features, num_frames, loglikes, sms, stream);
  if (steps <= 10) return LaunchSteps<10>(model, features, num_frames, loglikes, sms, stream);
  if (steps <= 12) return LaunchSteps<12>(model, features, num_frames, loglikes, sms, stream);
  return absl::InvalidArgumentError(
      absl::StrCat("wgmma supports dimensions up to ", kWgmmaMaxDim, ", the model has ", model.dim));
}

}  // namespace gmmscore
