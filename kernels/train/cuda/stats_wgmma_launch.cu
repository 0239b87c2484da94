// Launch of WgmmaStatsKernel: the instance from the tile columns (4, 8, 10
// or 11 k-steps), the shared memory from its layout.
#include "kernels/train/cuda/stats_wgmma_launch.h"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_wgmma_kernel.cuh"

namespace gmmscore {
namespace train_cuda {
namespace {

template <int N>
using Int = std::integral_constant<int, N>;

template <typename F>
absl::Status DispatchCols(int cols, F&& f) {
  switch (cols) {
    case 32: return f(Int<4>());
    case 64: return f(Int<8>());
    case 80: return f(Int<10>());
    case 88: return f(Int<11>());
  }
  return absl::InvalidArgumentError(absl::StrCat("no wgmma statistics kernel for ", cols, " columns"));
}

template <int kSteps>
absl::StatusOr<size_t> Prepare(int dim) {
  const size_t bytes = stats_wgmma_detail::WgmmaStatsLayout<kSteps>::Bytes(dim);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&WgmmaStatsKernel<kSteps>), bytes));
  return bytes;
}

absl::Status CheckDevice() {
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  if (info.major != 9 || info.minor != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "wgmma statistics need a compute capability 9.0 GPU (H100, H200); this one is ", info.major, ".", info.minor));
  }
  return absl::OkStatus();
}

}  // namespace

int WgmmaStatsCols(int dim) {
  if (dim < 1 || dim > kTcMaxDim) return 0;
  for (int cols : {32, 64, 80, 88}) {
    if (TcCols(dim) <= cols) return cols;
  }
  return 0;
}

absl::StatusOr<int> WgmmaStatsCtasPerSm(int dim) {
  GMM_RETURN_IF_ERROR(CheckDevice());
  int ctas = 0;
  GMM_RETURN_IF_ERROR(DispatchCols(WgmmaStatsCols(dim), [&](auto steps) -> absl::Status {
    GMM_ASSIGN_OR_RETURN(const size_t bytes, Prepare<decltype(steps)::value>(dim));
    GMM_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                 &ctas, &WgmmaStatsKernel<decltype(steps)::value>, stats_wgmma_detail::kThreads, bytes),
                             "wgmma statistics kernel occupancy");
    return absl::OkStatus();
  }));
  return ctas;
}

absl::Status LaunchWgmmaStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                              int num_items, const float* tile_big, const float* tile_small, float* lse_max,
                              float* lse_log, double* partials, cudaStream_t stream) {
  if (num_items == 0) return absl::OkStatus();
  if (model.tile != kTcTile) {
    return absl::InvalidArgumentError(absl::StrCat("wgmma statistics need tiles of ", kTcTile, " Gaussians"));
  }
  GMM_RETURN_IF_ERROR(CheckDevice());
  return DispatchCols(WgmmaStatsCols(model.dim), [&](auto steps) -> absl::Status {
    GMM_ASSIGN_OR_RETURN(const size_t bytes, Prepare<decltype(steps)::value>(model.dim));
    WgmmaStatsKernel<decltype(steps)::value><<<num_items, stats_wgmma_detail::kThreads, bytes, stream>>>(
        model, pairs, items, tile_big, tile_small, lse_max, lse_log, partials);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch wgmma statistics kernel");
    return absl::OkStatus();
  });
}

}  // namespace train_cuda
}  // namespace gmmscore
