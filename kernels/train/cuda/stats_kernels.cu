// Launchers of the statistics kernels: dimension and tile width pick the
// instance (tile 64 with 1..6 columns per thread up to D = 48, tile 32 with
// 1..8 columns up to D = 128; stats_policy.h), the shared memory follows
// from dimension and tile.
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_kernels.cuh"
#include "kernels/train/cuda/stats_kernels.h"

namespace gmmscore {
namespace train_cuda {
namespace {

template <int N>
using Int = std::integral_constant<int, N>;

// Calls f(Int<tile>, Int<columns>) for the instance shape of (dim, tile);
// INVALID_ARGUMENT for shapes no instance serves.
template <typename F>
absl::Status DispatchShape(int dim, int tile, F&& f) {
  if (!StatsShapeSupported(dim, tile)) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA statistics support feature dimensions 1 to ", kMaxStatsDim,
                                                   " (tiles of 64 Gaussians up to ", kMaxTile64Dim, "), not ", dim,
                                                   " with tiles of ", tile));
  }
  const int columns = ColumnsPerThread(dim, tile);
  if (tile == 64) {
    switch (columns) {
      case 1: return f(Int<64>(), Int<1>());
      case 2: return f(Int<64>(), Int<2>());
      case 3: return f(Int<64>(), Int<3>());
      case 4: return f(Int<64>(), Int<4>());
      case 5: return f(Int<64>(), Int<5>());
      case 6: return f(Int<64>(), Int<6>());
    }
  } else {
    switch (columns) {
      case 1: return f(Int<32>(), Int<1>());
      case 2: return f(Int<32>(), Int<2>());
      case 3: return f(Int<32>(), Int<3>());
      case 4: return f(Int<32>(), Int<4>());
      case 5: return f(Int<32>(), Int<5>());
      case 6: return f(Int<32>(), Int<6>());
      case 7: return f(Int<32>(), Int<7>());
      case 8: return f(Int<32>(), Int<8>());
    }
  }
  return absl::InternalError(absl::StrCat("no statistics kernel for dimension ", dim, " and tile ", tile));
}

// Calls f(Int<tile>, Int<columns>, Int<flush>) for the statistics kernel
// instance of (dim, tile, flush_tiles).
template <typename F>
absl::Status DispatchStats(int dim, int tile, int flush_tiles, F&& f) {
  if (flush_tiles == 0) return DispatchShape(dim, tile, [&](auto t, auto c) { return f(t, c, Int<0>()); });
  if (flush_tiles == kStatsFlushTilesAlt) {
    return DispatchShape(dim, tile, [&](auto t, auto c) { return f(t, c, Int<kStatsFlushTilesAlt>()); });
  }
  return absl::InvalidArgumentError(absl::StrCat("statistics flush every ", flush_tiles, " tiles is not built"));
}

// The statistics kernel of `dim` with its shared memory allowed.
template <int kTile, int kColumns, int kFlush>
absl::StatusOr<size_t> PrepareStats(int dim) {
  const size_t bytes = sizeof(float) * stats_detail::StatsSharedFloats(dim, kTile, kColumns);
  GMM_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(&StatsKernel<kTile, kColumns, kFlush>), bytes));
  return bytes;
}
template <int kTile, int kColumns, int kFlush>
absl::StatusOr<size_t> PrepareKeptStats() {
  const size_t bytes = sizeof(float) * stats_detail::KeptStatsSharedFloats(kTile, kColumns);
  GMM_RETURN_IF_ERROR(
      AllowDynamicSharedMemory(reinterpret_cast<const void*>(&KeptStatsKernel<kTile, kColumns, kFlush>), bytes));
  return bytes;
}

#define GMM_STATS_INSTANCE decltype(tile)::value, decltype(columns)::value, decltype(flush)::value

}  // namespace

bool StatsShapeSupported(int dim, int tile) {
  return dim >= 1 && dim <= kMaxStatsDim && (tile == 32 || (tile == 64 && dim <= kMaxTile64Dim));
}

absl::StatusOr<int> StatsCtasPerSm(int dim, int tile_gaussians, int flush_tiles) {
  int ctas = 0;
  GMM_RETURN_IF_ERROR(DispatchStats(dim, tile_gaussians, flush_tiles, [&](auto tile, auto columns, auto flush) -> absl::Status {
    GMM_ASSIGN_OR_RETURN(const size_t bytes, (PrepareStats<GMM_STATS_INSTANCE>(dim)));
    GMM_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                 &ctas, &StatsKernel<GMM_STATS_INSTANCE>, kStatsThreads, bytes),
                             "statistics kernel occupancy");
    return absl::OkStatus();
  }));
  return ctas;
}

absl::Status LaunchLse(const StatsModelView& model, const PairsView& pairs, const LseItem* items,
                       int num_items, float* lse_max, float* lse_log, cudaStream_t stream, ScoresView scores,
                       KeptStatsGemm kept_gemm) {
  if (num_items == 0) return absl::OkStatus();
  if (scores.data != nullptr && scores.row_floats <= 0) return absl::InvalidArgumentError("kept scores without rows");
  if (kept_gemm == KeptStatsGemm::kAuto) return absl::InvalidArgumentError("LaunchLse needs a resolved kept_gemm");
  if (scores.data != nullptr && kept_gemm == KeptStatsGemm::kFp64Mma) {
    return LaunchLseDmma(model, pairs, items, num_items, lse_max, lse_log, stream, scores);
  }
  if (!StatsShapeSupported(model.dim, model.tile)) return absl::InvalidArgumentError("unsupported statistics shape");
  auto launch = [&](auto kernel, int tile) -> absl::Status {
    const size_t bytes = sizeof(float) * stats_detail::LseSharedFloats(model.dim, tile);
    GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), bytes));
    kernel<<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max, lse_log, scores);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch log-sum-exp kernel");
    return absl::OkStatus();
  };
  return model.tile == 64 ? launch(&LseKernel<64>, 64) : launch(&LseKernel<32>, 32);
}

absl::Status LaunchStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                         int num_items, float* lse_max, float* lse_log, double* partials, cudaStream_t stream,
                         int flush_tiles, ScoresView scores, KeptStatsGemm kept_gemm) {
  if (num_items == 0) return absl::OkStatus();
  if (scores.data != nullptr && model.tile_in_state == nullptr) {
    return absl::InvalidArgumentError("kept scores need the model's tile_in_state");
  }
  if (kept_gemm == KeptStatsGemm::kAuto) return absl::InvalidArgumentError("LaunchStats needs a resolved kept_gemm");
  const bool dmma = scores.data != nullptr && kept_gemm == KeptStatsGemm::kFp64Mma;
  if (dmma) {
    GMM_RETURN_IF_ERROR(LaunchKeptStatsDmma(model, pairs, items, num_items, lse_max, lse_log, partials, stream, scores));
    if (!model.has_single_tiles) return absl::OkStatus();
  }
  return DispatchStats(model.dim, model.tile, flush_tiles, [&](auto tile, auto columns, auto flush) -> absl::Status {
    if (scores.data != nullptr && !dmma) {  // items of multi-tile states
      GMM_ASSIGN_OR_RETURN(const size_t kept_bytes, (PrepareKeptStats<GMM_STATS_INSTANCE>()));
      KeptStatsKernel<GMM_STATS_INSTANCE><<<num_items, kStatsThreads, kept_bytes, stream>>>(
          model, pairs, items, lse_max, lse_log, partials, scores);
      GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch kept-score statistics kernel");
      if (!model.has_single_tiles) return absl::OkStatus();
    }
    GMM_ASSIGN_OR_RETURN(const size_t bytes, (PrepareStats<GMM_STATS_INSTANCE>(model.dim)));
    StatsKernel<GMM_STATS_INSTANCE><<<num_items, kStatsThreads, bytes, stream>>>(model, pairs, items, lse_max,
                                                                                lse_log, partials, scores);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch statistics kernel");
    return absl::OkStatus();
  });
}

absl::Status LaunchReducePartials(const double* partials, const ItemRange* ranges, int num_outputs, int tile,
                                  int row_doubles, double* out, cudaStream_t stream) {
  if (num_outputs == 0) return absl::OkStatus();
  const dim3 grid(num_outputs, (tile * row_doubles + kStatsThreads - 1) / kStatsThreads);
  ReducePartialsKernel<<<grid, kStatsThreads, 0, stream>>>(partials, ranges, tile, row_doubles, out);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch partials reduction");
  return absl::OkStatus();
}

absl::Status LaunchWeightedLseSum(const float* lse_max, const float* lse_log, const PairRecord* records,
                                  int64_t num_pairs, double* block_sums, cudaStream_t stream) {
  WeightedLseSumKernel<<<kLseSumBlocks, kStatsThreads, 0, stream>>>(lse_max, lse_log, records, num_pairs,
                                                                    block_sums);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch log-likelihood sum");
  return absl::OkStatus();
}

}  // namespace train_cuda
}  // namespace gmmscore
