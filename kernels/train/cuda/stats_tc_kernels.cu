// Launchers of the tensor-core statistics kernels (stats_tc_kernels.cuh):
// the k-steps of TcCols(dim) pick the instance (4, 8 or 11: D <= 15, 31,
// 43), the shared memory follows from the dimension.
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_kernels.h"
#include "kernels/train/cuda/stats_tc_kernels.cuh"

namespace gmmscore {
namespace train_cuda {
namespace {

template <int N>
using Int = std::integral_constant<int, N>;

// INVALID_ARGUMENT for shapes no instance serves, FAILED_PRECONDITION for a
// device without TF32 MMAs.
absl::Status CheckTc(const StatsModelView* model, int dim, int tile) {
  if (!TcStatsShapeSupported(dim, tile)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor-core statistics support tiles of ", kTcTile,
                                                    " Gaussians and feature dimensions 1 to ", kTcMaxDim, ", not ",
                                                    dim, " with tiles of ", tile));
  }
  if (model != nullptr && model->tc_tiles == nullptr) {
    return absl::InvalidArgumentError("the model was not set up for the tensor-core statistics kernels");
  }
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  if (info.major < 8) {
    return absl::FailedPreconditionError(absl::StrCat("tensor-core (3xTF32) statistics need sm_80 or newer; device ",
                                                      info.device, " is sm_", info.major, info.minor));
  }
  return absl::OkStatus();
}

// Calls f(Int<steps>) for the statistics instance of `dim`.
template <typename F>
absl::Status DispatchSteps(int dim, F&& f) {
  const int steps = TcCols(dim) / 8;
  if (steps <= 4) return f(Int<4>());
  if (steps <= 8) return f(Int<8>());
  return f(Int<11>());
}

template <int kSteps>
absl::StatusOr<size_t> PrepareTcStats(int dim) {
  const size_t bytes = sizeof(float) * stats_tc_detail::TcStatsSharedFloats(dim);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&TcStatsKernel<kSteps>), bytes));
  return bytes;
}

}  // namespace

bool TcStatsShapeSupported(int dim, int tile) { return dim >= 1 && dim <= kTcMaxDim && tile == kTcTile; }

absl::StatusOr<int> TcStatsCtasPerSm(int dim) {
  GMM_RETURN_IF_ERROR(CheckTc(nullptr, dim, kTcTile));
  int ctas = 0;
  GMM_RETURN_IF_ERROR(DispatchSteps(dim, [&](auto steps) -> absl::Status {
    GMM_ASSIGN_OR_RETURN(const size_t bytes, PrepareTcStats<decltype(steps)::value>(dim));
    GMM_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                 &ctas, &TcStatsKernel<decltype(steps)::value>, kStatsThreads, bytes),
                             "tensor-core statistics kernel occupancy");
    return absl::OkStatus();
  }));
  return ctas;
}

absl::Status LaunchTcLse(const StatsModelView& model, const PairsView& pairs, const LseItem* items, int num_items,
                         float* lse_max, float* lse_log, cudaStream_t stream) {
  if (num_items == 0) return absl::OkStatus();
  GMM_RETURN_IF_ERROR(CheckTc(&model, model.dim, model.tile));
  const size_t bytes = sizeof(float) * stats_tc_detail::TcLseSharedFloats(model.dim);
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&TcLseKernel), bytes));
  TcLseKernel<<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch tensor-core log-sum-exp kernel");
  return absl::OkStatus();
}

absl::Status LaunchTcStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                           int num_items, float* lse_max, float* lse_log, double* partials, cudaStream_t stream) {
  if (num_items == 0) return absl::OkStatus();
  GMM_RETURN_IF_ERROR(CheckTc(&model, model.dim, model.tile));
  return DispatchSteps(model.dim, [&](auto steps) -> absl::Status {
    GMM_ASSIGN_OR_RETURN(const size_t bytes, PrepareTcStats<decltype(steps)::value>(model.dim));
    TcStatsKernel<decltype(steps)::value>
        <<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log, partials);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch tensor-core statistics kernel");
    return absl::OkStatus();
  });
}

}  // namespace train_cuda
}  // namespace gmmscore
