// Launchers of the CUDA statistics kernels (stats_kernels.cuh): everything
// on the caller's stream, device pointers in and out, no host
// synchronisation. The backend (cuda_stats_backend.cc) plans the items
// (stats_plan.h) and calls these in order per chunk of pairs:
//
//   LaunchLse(...)             // states of several tiles: log-sum-exp per pair
//   LaunchStats(...)           // per batch: float64 partial sums per item
//   LaunchReducePartials(...)  // per batch: partials -> one block per output
//   LaunchWeightedLseSum(...)  // sum of w * lse, per block, for total_loglike
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/stats_policy.h"
#include "kernels/train/cuda/stats_work.h"

namespace gmmscore {
namespace train_cuda {

// The model on the device (StatsTiles uploaded).
struct StatsModelView {
  const float* tiles = nullptr;          // num_tiles x TileFloats(dim, tile)
  const int32_t* single_tile = nullptr;  // per tile: its state has one tile
  const float* center = nullptr;         // dim
  int dim = 0;
  int tile = 0;                          // Gaussians per tile, 64 or 32
  // The tensor-core kernels' tiles (BuildTcTiles): num_tiles x kTcTile x
  // TcCols(dim); null when the model was set up for the float32 kernels.
  const float* tc_tiles = nullptr;
  const int32_t* tile_in_state = nullptr;  // per tile: its index among its state's tiles
  bool has_single_tiles = true;            // some state has one tile (false: LaunchStats skips a launch)
};

// Kept scores (stats_policy.h): pair p's score under Gaussian g of its state
// at data[p * row_floats + g] (p relative to the chunk, g counting the
// state's padding). Null data: the statistics kernel scores again.
struct ScoresView {
  float* data = nullptr;
  int64_t row_floats = 0;
};

// The chunk's pairs on the device. Pair i (relative to the chunk) reads
// frame records[i].frame with weight records[i].weight; null records mean
// frame first_frame + i, weight 1 (a global GMM's pairs).
struct PairsView {
  const float* frames = nullptr;  // num_frames x dim, row-major
  const PairRecord* records = nullptr;
  int64_t first_frame = 0;
};

// True for the feature dimensions and tile widths the kernels are built for
// (1..kMaxStatsDim; tile 32, or 64 up to kMaxTile64Dim).
bool StatsShapeSupported(int dim, int tile);

// Resident CTAs per SM of the statistics kernel for (dim, tile,
// flush_tiles) (the planner's item target is a multiple of this times the
// SM count). flush_tiles: 0 or kStatsFlushTilesAlt (stats_policy.h).
absl::StatusOr<int> StatsCtasPerSm(int dim, int tile, int flush_tiles = kStatsFlushTiles);

// The tensor-core kernels (stats_tc_kernels.cuh), drop-in for LaunchLse
// and LaunchStats on the same items, partials and lse arrays; the model
// must carry tc_tiles and have tiles of kTcTile. INVALID_ARGUMENT for
// shapes TcStatsShapeSupported refuses; FAILED_PRECONDITION on a device
// before sm_80.
bool TcStatsShapeSupported(int dim, int tile);
absl::StatusOr<int> TcStatsCtasPerSm(int dim);
absl::Status LaunchTcLse(const StatsModelView& model, const PairsView& pairs, const LseItem* items, int num_items,
                         float* lse_max, float* lse_log, cudaStream_t stream);
absl::Status LaunchTcStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                           int num_items, float* lse_max, float* lse_log, double* partials, cudaStream_t stream);

// lse_max[p], lse_log[p] (lse = max + log) of every pair of `items`, and
// with scores.data every score of those pairs (the statistics kernel's).
// kept_gemm (resolved) kFp64Mma with scores.data: the float64 tensor-core
// kernel (LaunchLseDmma). Either statistics kernel of kept scores reads
// either LSE kernel's scores (each item's scores and log-sum-exps come from
// the same one).
absl::Status LaunchLse(const StatsModelView& model, const PairsView& pairs, const LseItem* items,
                       int num_items, float* lse_max, float* lse_log, cudaStream_t stream,
                       ScoresView scores = {}, KeptStatsGemm kept_gemm = KeptStatsGemm::kFfma);
// Whether the float64 tensor-core kernels of this build run on the current
// device (of compute capability `major`): sm_90 machine code or PTX in the
// binary (a build for other architectures compiles them to a trap).
bool Fp64MmaKernelsBuiltFor(int major);
// OK where the float64 tensor-core kernels serve a model of `dim` in tiles
// of `tile` on the current device `info`: INVALID_ARGUMENT for a shape
// (Fp64MmaShapeSupported), FAILED_PRECONDITION for a device or build.
absl::Status CheckFp64MmaServes(int dim, int tile, const DeviceInfo& info);
absl::Status LaunchLseDmma(const StatsModelView& model, const PairsView& pairs, const LseItem* items,
                           int num_items, float* lse_max, float* lse_log, cudaStream_t stream, ScoresView scores);

// partials[item.slot] = the float64 sums (tile x StatsRowDoubles(dim)) of
// each item; reads lse_max/lse_log of pairs of multi-tile states (and with
// scores.data their scores, as LaunchLse wrote them), writes them for
// single-tile states.
// kept_gemm (kFfma or kFp64Mma, not kAuto) picks the kept-score items'
// kernel; kFp64Mma needs Fp64MmaShapeSupported and an sm_90 device
// (FAILED_PRECONDITION on another).
absl::Status LaunchStats(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                         int num_items, float* lse_max, float* lse_log, double* partials, cudaStream_t stream,
                         int flush_tiles = kStatsFlushTiles, ScoresView scores = {},
                         KeptStatsGemm kept_gemm = KeptStatsGemm::kFfma);

// The float64 tensor-core kernel of kept-score items alone
// (stats_dmma_kernel.cuh); LaunchStats calls it for kFp64Mma.
absl::Status LaunchKeptStatsDmma(const StatsModelView& model, const PairsView& pairs, const StatsItem* items,
                                 int num_items, const float* lse_max, const float* lse_log, double* partials,
                                 cudaStream_t stream, ScoresView scores, int step_unroll = kFp64MmaStepUnroll);

// For each output o: rows [out_row, out_row + rows) of `out` (row_doubles
// each) = the sum over slots ranges[o] (in order) of the partials' first
// `rows` rows (tile x row_doubles doubles per slot).
absl::Status LaunchReducePartials(const double* partials, const ItemRange* ranges, int num_outputs, int tile,
                                  int row_doubles, double* out, cudaStream_t stream);

// block_sums[b] (kLseSumBlocks of them) = float64 sums of
// weight * (lse_max + lse_log) over a fixed share of the `num_pairs` pairs
// (weights from `records`, 1 where null).
absl::Status LaunchWeightedLseSum(const float* lse_max, const float* lse_log, const PairRecord* records,
                                  int64_t num_pairs, double* block_sums, cudaStream_t stream);

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_H_
