// Launchers of the float64 tensor-core kernels (stats_dmma_kernel.cuh): the
// log-sum-exp kernel, and the statistics kernel of kept-score items in the
// instance of ceil(D / 8) x tiles; shared memory allowed, sm_90 checked.
#include <array>
#include <atomic>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_dmma_kernel.cuh"
#include "kernels/train/cuda/stats_kernels.h"

namespace gmmscore {
namespace train_cuda {
namespace {

template <int kXTiles, int kUnroll>
absl::Status Launch(const StatsModelView& model, const PairsView& pairs, const StatsItem* items, int num_items,
                    const float* lse_max, const float* lse_log, double* partials, cudaStream_t stream,
                    ScoresView scores) {
  const size_t bytes = sizeof(float) * stats_dmma_detail::SharedFloats(kXTiles);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&KeptStatsDmmaKernel<kXTiles, kUnroll>), bytes));
  KeptStatsDmmaKernel<kXTiles, kUnroll><<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log,
                                                                           partials, scores);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch float64 tensor-core statistics kernel");
  return absl::OkStatus();
}

// The checks both float64 kernels' launches share.
absl::Status CheckDmmaLaunch(const StatsModelView& model, const ScoresView& scores) {
  if (scores.data == nullptr || model.tile_in_state == nullptr) {
    return absl::InvalidArgumentError("the float64 tensor-core statistics kernels work on kept scores");
  }
  if (scores.row_floats % 4 != 0 || scores.row_floats < stats_dmma_detail::kTile) {
    return absl::InvalidArgumentError(absl::StrCat("kept-score rows of ", scores.row_floats,
                                                   " floats: the float64 kernels copy whole 16-byte runs of 64"));
  }
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  return CheckFp64MmaServes(model.dim, model.tile, info);
}

}  // namespace

absl::Status CheckFp64MmaServes(int dim, int tile, const DeviceInfo& info) {
  if (!Fp64MmaShapeSupported(dim, tile)) {
    return absl::InvalidArgumentError(absl::StrCat("float64 tensor-core statistics support tiles of 64 Gaussians "
                                                   "and feature dimensions 1 to ", kFp64MmaMaxDim, ", not ", dim,
                                                   " with tiles of ", tile));
  }
  if (info.major < 9 || !Fp64MmaKernelsBuiltFor(info.major)) {
    return absl::FailedPreconditionError(absl::StrCat("float64 tensor-core statistics (mma m16n8k4 .f64) need sm_90 "
                                                      "or newer and a build with sm_90 code; the device is sm_",
                                                      info.major, info.minor));
  }
  return absl::OkStatus();
}

bool Fp64MmaKernelsBuiltFor(int major) {
  if (major < 9) return false;
  // Asked at every launch: the driver is asked once per device.
  constexpr int kDevices = 64;
  static std::array<std::atomic<int>, kDevices> known{};  // 0 not asked yet, 1 built, 2 not
  int device = 0;
  const bool cacheable = cudaGetDevice(&device) == cudaSuccess && device >= 0 && device < kDevices;
  if (cacheable && known[device].load(std::memory_order_acquire) != 0) return known[device].load() == 1;
  cudaFuncAttributes attributes{};
  bool built = false;
  if (cudaFuncGetAttributes(&attributes, &LseDmmaKernel) == cudaSuccess) {
    // ptxVersion is the virtual architecture the code was compiled for
    // (__CUDA_ARCH__): below 90 the MMAs are a trap, whatever it was JIT-ed to.
    built = attributes.binaryVersion >= 90 && attributes.ptxVersion >= 90;
  } else {
    cudaGetLastError();  // no image for this device: clear the error, answer no
  }
  if (cacheable) known[device].store(built ? 1 : 2, std::memory_order_release);
  return built;
}

absl::Status LaunchLseDmma(const StatsModelView& model, const PairsView& pairs, const LseItem* items, int num_items,
                           float* lse_max, float* lse_log, cudaStream_t stream, ScoresView scores) {
  if (num_items == 0) return absl::OkStatus();
  GMM_RETURN_IF_ERROR(CheckDmmaLaunch(model, scores));
  const size_t bytes = sizeof(float) * stats_dmma_detail::LseSharedFloats(model.dim);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&LseDmmaKernel), bytes));
  LseDmmaKernel<<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log, scores);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch float64 tensor-core log-sum-exp kernel");
  return absl::OkStatus();
}

absl::Status LaunchKeptStatsDmma(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                                 int num_items, const float* lse_max, const float* lse_log, double* partials,
                                 cudaStream_t stream, ScoresView scores, int step_unroll) {
  if (num_items == 0) return absl::OkStatus();
  if (step_unroll != kFp64MmaStepUnroll && step_unroll != kFp64MmaStepUnrollAlt) {
    return absl::InvalidArgumentError(absl::StrCat("float64 tensor-core statistics unroll ", step_unroll, " is not built"));
  }
  GMM_RETURN_IF_ERROR(CheckDmmaLaunch(model, scores));
  auto launch = [&](auto x_tiles) -> absl::Status {
    constexpr int kXTiles = decltype(x_tiles)::value;
    return step_unroll == kFp64MmaStepUnroll
               ? Launch<kXTiles, kFp64MmaStepUnroll>(model, pairs, items, num_items, lse_max, lse_log, partials, stream,
                                                    scores)
               : Launch<kXTiles, kFp64MmaStepUnrollAlt>(model, pairs, items, num_items, lse_max, lse_log, partials,
                                                       stream, scores);
  };
  switch (stats_dmma_detail::XTiles(model.dim)) {
    case 1: return launch(std::integral_constant<int, 1>());
    case 2: return launch(std::integral_constant<int, 2>());
    case 3: return launch(std::integral_constant<int, 3>());
    case 4: return launch(std::integral_constant<int, 4>());
    case 5: return launch(std::integral_constant<int, 5>());
  }
  return absl::InternalError(absl::StrCat("no float64 tensor-core statistics kernel for dimension ", model.dim));
}

}  // namespace train_cuda
}  // namespace gmmscore
