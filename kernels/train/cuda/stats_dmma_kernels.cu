// Launcher of the float64 tensor-core statistics kernel of kept-score items
// (stats_dmma_kernel.cuh): the instance of ceil(D / 8) x tiles, its shared
// memory allowed, sm_90 checked.
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

template <int kXTiles>
absl::Status Launch(const StatsModelView& model, const PairsView& pairs, const StatsItem* items, int num_items,
                    const float* lse_max, const float* lse_log, double* partials, cudaStream_t stream,
                    ScoresView scores) {
  const size_t bytes = sizeof(float) * stats_dmma_detail::SharedFloats(kXTiles);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&KeptStatsDmmaKernel<kXTiles>), bytes));
  KeptStatsDmmaKernel<kXTiles><<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log,
                                                                           partials, scores);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch float64 tensor-core statistics kernel");
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchKeptStatsDmma(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                                 int num_items, const float* lse_max, const float* lse_log, double* partials,
                                 cudaStream_t stream, ScoresView scores) {
  if (num_items == 0) return absl::OkStatus();
  if (scores.data == nullptr || model.tile_in_state == nullptr) {
    return absl::InvalidArgumentError("the float64 tensor-core statistics kernel reads kept scores");
  }
  if (!Fp64MmaShapeSupported(model.dim, model.tile)) {
    return absl::InvalidArgumentError(absl::StrCat("float64 tensor-core statistics support tiles of 64 Gaussians "
                                                   "and feature dimensions 1 to ", kFp64MmaMaxDim, ", not ",
                                                   model.dim, " with tiles of ", model.tile));
  }
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  if (info.major < 9) {
    return absl::FailedPreconditionError(absl::StrCat(
        "float64 tensor-core statistics (mma m16n8k4 .f64) need sm_90 or newer, not sm_", info.major, info.minor));
  }
  switch (stats_dmma_detail::XTiles(model.dim)) {
    case 1: return Launch<1>(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores);
    case 2: return Launch<2>(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores);
    case 3: return Launch<3>(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores);
    case 4: return Launch<4>(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores);
    case 5: return Launch<5>(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores);
  }
  return absl::InternalError(absl::StrCat("no float64 tensor-core statistics kernel for dimension ", model.dim));
}

}  // namespace train_cuda
}  // namespace gmmscore
