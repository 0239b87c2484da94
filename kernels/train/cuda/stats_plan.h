// Host-side planning of the CUDA statistics pass (no CUDA calls; tested on
// any machine): pairs grouped by target, the model cut into Gaussian tiles in
// the layout the kernels read, and each chunk of pairs cut into the work
// items and launches of the two kernels.
//
//   GroupedPairs grouped = GroupStatsPairs(pairs, num_frames, num_targets, records);
//   StatsTiles tiles = BuildStatsTiles(model, ChooseTileGaussians(model));
//   ChunkPlan plan = PlanChunk(grouped, begin, end, tiles, model.state_offsets(), target_items, max_items);
//
// Everything here is a pure function of its inputs, so the same request on
// the same device plans the same launches and the float64 sums come out in
// the same order (bit-identical statistics run to run).
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_PLAN_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/cuda/stats_work.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {
namespace train_cuda {

// Pairs [begin, end) of the grouped order all go to `target`.
struct TargetSegment {
  int32_t target = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

struct GroupedPairs {
  // Empty pairs (a global GMM): pair i is frame i with weight 1, target 0,
  // and `frames` / `weights` stay empty (the kernels generate them).
  bool identity = false;
  int64_t num_pairs = 0;
  // num_pairs records grouped by target, stable within one: the storage
  // GroupStatsPairs was given (null for identity).
  const PairRecord* records = nullptr;
  std::vector<TargetSegment> segments;   // increasing target, non-empty only
  double total_weight = 0.0;             // in the caller's pair order, float64
};

// Groups validated pairs by target into `records` (pairs.size() entries,
// the caller's: the backend passes pinned memory, so the upload is a plain
// DMA): a counting sort, O(pairs + targets), over up to kGroupSlices slices
// of the pairs on as many threads when the request is large. The slicing
// depends on the sizes only, so total_weight (summed per slice, slices in
// order) is the same bits on every machine. `num_frames` is used only for
// empty `pairs`.
GroupedPairs GroupStatsPairs(absl::Span<const StatsPair> pairs, int64_t num_frames, int32_t num_targets,
                             absl::Span<PairRecord> records);

// The tile width (64 or 32, stats_policy.h) for `model`: 32 beyond D = 48,
// else whichever scores fewer padding Gaussians, 32-wide tiles counted
// kTile32RelativeCost times as expensive.
int ChooseTileGaussians(const DiagGmmModel& model);

// The model in the kernels' layout: each state's Gaussians cut into tiles of
// `tile_gaussians`, each tile TileFloats(dim, tile) floats
// [K (tile)] [u: dim rows x tile] [v: dim rows x tile] (stats_policy.h), so
// that a thread's 4 (or 2) Gaussians of one dimension are one vector load.
// A state's last tile is padded with Gaussians of K = kPaddingGconst, u = v = 0.
struct StatsTiles {
  int dim = 0;
  int tile_gaussians = 0;
  std::vector<int32_t> state_first_tile;  // S + 1 entries
  std::vector<int32_t> single_tile;       // per tile: 1 when its state has one tile
  std::vector<int32_t> tile_in_state;     // per tile: its index among its state's tiles
  std::vector<float> params;              // num_tiles() x TileFloats
  int32_t num_tiles() const { return state_first_tile.back(); }
};

StatsTiles BuildStatsTiles(const DiagGmmModel& model, int tile_gaussians);

// Floats of one pair's row of kept scores (stats_policy.h): the most
// Gaussians, padding included, of any state of several tiles; 0 when every
// state has one tile (the statistics kernel scores those itself).
int64_t KeptScoreRowFloats(const StatsTiles& tiles);

// The tensor-core kernels' layout of the same tiles (tile_gaussians must be
// kTcTile): per tile, kTcTile rows of TcCols(dim) floats, row i =
// [K, u (dim), v (dim), 0 ...] of the tile's Gaussian i; padding Gaussians
// K = kTcPaddingGconst, u = v = 0.
std::vector<float> BuildTcTiles(const StatsTiles& tiles);

// Output block `o` of a batch: Gaussian tile `tile_in_state` of target `target`.
struct StatsOutput {
  int32_t target = 0;
  int32_t tile_in_state = 0;
};

// One launch of the statistics kernel and its reduction. Partial slots are
// numbered within the batch: ranges[o] are the slots output o adds up, and
// the rows of its real Gaussians it writes (outputs packed in order).
struct StatsBatch {
  std::vector<StatsItem> items;       // in launch order (pair range major)
  std::vector<ItemRange> ranges;      // one per output
  std::vector<StatsOutput> outputs;
  int64_t rows = 0;                   // output rows of the batch
};

struct ChunkPlan {
  std::vector<LseItem> lse_items;     // pairs of targets whose state has several tiles
  std::vector<StatsBatch> batches;
};

// Plans grouped pairs [chunk_begin, chunk_end) (item pair indices relative
// to chunk_begin). A target's pairs are cut into ranges of U pair tiles with
// U chosen so that about `target_items` items cover the chunk (at least
// kMinPairTilesPerItem tiles each); batches hold at most `max_items` items.
// Items of one pair range and consecutive Gaussian tiles are launched side
// by side, so their frames are read from L2 rather than DRAM.
// `state_offsets` (S + 1, the model's) give each tile's real Gaussians.
ChunkPlan PlanChunk(const GroupedPairs& grouped, int64_t chunk_begin, int64_t chunk_end,
                    const StatsTiles& tiles, absl::Span<const int64_t> state_offsets, int64_t target_items,
                    int32_t max_items);

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_PLAN_H_
