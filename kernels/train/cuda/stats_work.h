// The work descriptions the host plans (stats_plan.h) and the statistics
// kernels read (stats_kernels.cuh): plain 16-byte records, one int4 load on
// the device. Pair indices are relative to the chunk of pairs on the device.
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WORK_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WORK_H_

#include <cstdint>

namespace gmmscore {
namespace train_cuda {

// One CTA of the log-sum-exp kernel: up to kPairsPerTile pairs of one target
// against every tile of its state, [first_tile, first_tile + num_tiles).
struct alignas(16) LseItem {
  int32_t pair_begin = 0;
  int32_t pair_end = 0;
  int32_t first_tile = 0;
  int32_t num_tiles = 0;
};

// One CTA of the statistics kernel: pairs [pair_begin, pair_end) of one
// target against one tile of its state; its float64 sums go to partial slot
// `slot` of the launch. Where the state has a single tile (the model's
// per-tile flag), the kernel computes each pair's log-sum-exp itself (and
// writes it) instead of reading the LSE kernel's.
struct alignas(16) StatsItem {
  int32_t pair_begin = 0;
  int32_t pair_end = 0;
  int32_t tile = 0;
  int32_t slot = 0;
};

// One output of a statistics launch: the partial slots [item_begin,
// item_end) the reduction adds (in this order), of whose rows the first
// `rows` (the tile's real Gaussians) go to output rows [out_row, out_row + rows).
struct alignas(16) ItemRange {
  int32_t item_begin = 0;
  int32_t item_end = 0;
  int32_t out_row = 0;
  int32_t rows = 0;
};

// A pair as the kernels read it: one 8-byte load. No member initialisers, so
// that vectors of them can be sized without being zeroed first.
struct alignas(8) PairRecord {
  int32_t frame;
  float weight;
};

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WORK_H_
