// The statistics kernel of kept scores on Hopper's float64 tensor cores
// (KeptStatsDmmaKernel): the same items, partial slots and posteriors as
// KeptStatsKernel (stats_kernels.cuh), with the statistics GEMM
//   acc[g][c] += sum_p gamma[g][p] x~[p][c],  x~ = [x, x^2] (raw features)
// on mma.sync m16n8k4 .f64 tiles instead of float32 FFMAs. On sm_90 those
// run at the float32 FFMA rate (measured on an H100: 66.5 TFLOP/s against
// 65 for FFMAs, stats_policy.h), but one instruction does 512 FMAs, reads
// its operands from registers, and the products and sums are float64:
// gamma and x are float32 values, so gamma x and gamma x^2 (x^2 = x x, exact
// in float64) are exact, and every sum is float64 from the first product.
//
// Per CTA (256 threads, 8 warps), one item: pairs [pair_begin, pair_end) of
// one target against one 64-Gaussian tile of its state.
//   Warp w owns Gaussian rows 16 (w % 4) .. + 15 (one m16 tile) and the
//   pair half w / 4 of every 64-pair tile (8 k4 steps of 4 pairs); each
//   lane holds the tile's 2 kXTiles accumulators of 8 columns (the x
//   columns 8j .. 8j + 7 and their squares).
//   Per k4 step a lane computes its two A elements, gamma = w e^(s - lse) of
//   (Gaussian group / group + 8, pair thread) from the kept score, and
//   loads one x per x tile for its B element (pair thread, column group),
//   squaring it for the x^2 tile: 2 + kXTiles shared loads per 2 kXTiles MMAs.
//   Pair tiles are double-buffered: tile i + 1's scores, log-sum-exps,
//   records and frames land (cp.async) while tile i is multiplied.
//   At the end the second pair half's warps hand their sums to the first
//   through shared memory; those add them (a fixed order) and write the
//   item's float64 partial: occupancy (summed from the A elements), then
//   the x and x^2 sums, as the other statistics kernels lay it out.
// Pairs past the item's end get gamma = 0 by select and x = 0 (never
// 0 x NaN); x rows past the dimension are zero.
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_DMMA_KERNEL_CUH_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_DMMA_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/train/cuda/stats_kernels.cuh"

namespace gmmscore {
namespace train_cuda {
namespace stats_dmma_detail {

inline constexpr int kTile = 64;  // Gaussians per item (4 m16 tiles)
inline constexpr int kWarps = kStatsThreads / 32;
inline constexpr int kHalfPairs = kPairsPerTile / 2;
static_assert(kWarps == 8 && kPairsPerTile == 64, "warp roles: 4 m16 tiles x 2 pair halves of a 64-pair tile");
// Score rows [pair][Gaussian] at pitch 72: a warp's A loads (4 pairs x 8
// Gaussians) fall in 32 different banks.
inline constexpr int kScorePitch = kTile + 8;
// x rows [column][pair] at pitch kPairPitch (68): a warp's B loads (8
// columns x 4 pairs) fall in 32 different banks.

__host__ __device__ constexpr int XTiles(int dim) { return (dim + 7) / 8; }

// One pair tile's buffer, in floats: scores, x rows, max, log, records (2
// floats each).
__host__ __device__ constexpr int BufferFloats(int x_tiles) {
  return kPairsPerTile * kScorePitch + 8 * x_tiles * kPairPitch + 4 * kPairsPerTile;
}
// Doubles the second pair half hands over: per warp of it and lane, the
// 8 kXTiles accumulators and 2 occupancies.
__host__ __device__ constexpr int HandoverDoubles(int x_tiles) { return 4 * 32 * (8 * x_tiles + 2); }
__host__ __device__ constexpr int64_t SharedFloats(int x_tiles) {
  return 2 * BufferFloats(x_tiles) > 2 * HandoverDoubles(x_tiles) ? 2 * BufferFloats(x_tiles)
                                                                  : 2 * HandoverDoubles(x_tiles);
}

#if defined(__CUDACC__)
// d += a b for one m16n8k4 float64 tile, the PTX ISA's fragments:
//   A (16 x 4): a0 (group, thread), a1 (group + 8, thread)
//   B (4 x 8):  b (thread, group)
//   C (16 x 8): c0 (group, 2 thread), c1 (group, 2 thread + 1),
//               c2 (group + 8, 2 thread), c3 (group + 8, 2 thread + 1)
// with group = lane / 4, thread = lane % 4. sm_90 and later (the shape is
// new in Hopper); older builds trap, and the launcher refuses their devices.
__device__ __forceinline__ void MmaF64(double (&d)[4], double a0, double a1, double b) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a0), "d"(a1), "d"(b));
#else
  __trap();
#endif
}
__device__ __forceinline__ double ShuffleXor(double v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
#else
inline void MmaF64(double (&d)[4], double a0, double a1, double b) { EmulatedMmaF64(d, a0, a1, b); }
inline double ShuffleXor(double v, int mask) { return EmulatedShuffleXorDouble(v, mask); }
#endif

// The views of one pair-tile buffer.
struct PairTileBuffer {
  float* scores;  // [pair][kScorePitch]
  float* x;       // [column][kPairPitch], 8 kXTiles rows (rows >= dim stay 0)
  float* max;
  float* log;
  PairRecord* records;

  __device__ __forceinline__ static PairTileBuffer At(float* base, int x_tiles) {
    PairTileBuffer b;
    b.scores = base;
    b.x = b.scores + kPairsPerTile * kScorePitch;
    b.max = b.x + 8 * x_tiles * kPairPitch;
    b.log = b.max + kPairsPerTile;
    b.records = reinterpret_cast<PairRecord*>(b.log + kPairsPerTile);
    return b;
  }
};

// Starts the copies of pair tile [pb, pb + n) into `to`: the scores of the
// item's Gaussian tile (columns [column, column + 64) of their rows), the
// pairs' log-sum-exps and records, and their frames' x (four threads per
// pair, dimensions d = thread % 4, + 4, ...). Pairs at or past n get x = 0
// (plain stores: the buffer is free when this runs); nothing else of them
// is copied.
__device__ __forceinline__ void PrefetchPairTile(const ScoresView& scores, const PairsView& pairs,
                                                 const float* lse_max, const float* lse_log, int dim, int pb, int n,
                                                 int64_t column, const PairTileBuffer& to, int thread) {
  using stats_detail::CommitAsync;
  using stats_detail::CopyAsyncBytes;
  for (int c = thread; c < kPairsPerTile * (kTile / 4); c += kStatsThreads) {
    const int p = c / (kTile / 4), q = c % (kTile / 4);
    if (p < n) CopyAsyncBytes<16>(to.scores + p * kScorePitch + 4 * q, scores.data + (pb + p) * scores.row_floats + column + 4 * q);
  }
  if (thread < n) {
    CopyAsyncBytes<4>(to.max + thread, lse_max + pb + thread);
    CopyAsyncBytes<4>(to.log + thread, lse_log + pb + thread);
    if (pairs.records != nullptr) {
      CopyAsyncBytes<8>(to.records + thread, pairs.records + pb + thread);
    } else {
      to.records[thread] = PairRecord{0, 1.0f};  // only the weight is read
    }
  }
  const int p = thread >> 2;
  if (p < n) {
    const int64_t frame = stats_detail::RecordOf(pairs, pb + p).frame;
    const float* row = pairs.frames + frame * dim;
    for (int d = thread & 3; d < dim; d += 4) CopyAsyncBytes<4>(to.x + d * kPairPitch + p, row + d);
  } else {
    for (int d = thread & 3; d < dim; d += 4) to.x[d * kPairPitch + p] = 0.0f;
  }
  CommitAsync();
}

// The warp's products over its pair half of one buffered tile of n pairs,
// kUnroll k4 steps at a time (stats_policy.h).
template <int kXTiles, int kUnroll>
__device__ __forceinline__ void MultiplyPairHalf(const PairTileBuffer& b, int n, int row0, int half, int lane,
                                                 double (&acc)[2 * kXTiles][4], float (&occ)[2]) {
  using stats_detail::FastExp;
  const int group = lane >> 2, thread = lane & 3;
#pragma unroll(kUnroll)
  for (int step = 0; step < kHalfPairs / 4; ++step) {
    const int p = half * kHalfPairs + 4 * step + thread;
    const float m = b.max[p], l = b.log[p], w = b.records[p].weight;
    const float s0 = b.scores[p * kScorePitch + row0 + group];
    const float s1 = b.scores[p * kScorePitch + row0 + group + 8];
    // Select, not multiply: what lies past n was never copied.
    const float g0 = p < n ? w * FastExp((s0 - m) - l) : 0.0f;
    const float g1 = p < n ? w * FastExp((s1 - m) - l) : 0.0f;
    occ[0] += g0;  // float32 over one tile's 8 steps (the FP64 pipe is the MMAs')
    occ[1] += g1;
    const double a0 = g0, a1 = g1;
#pragma unroll
    for (int j = 0; j < kXTiles; ++j) {
      const double x = b.x[(8 * j + group) * kPairPitch + p];
      MmaF64(acc[j], a0, a1, x);
      MmaF64(acc[kXTiles + j], a0, a1, x * x);
    }
  }
}

}  // namespace stats_dmma_detail

// One CTA per StatsItem of a multi-tile state whose scores the LSE kernel
// kept, tiles of 64 Gaussians (CTAs of single-tile items return at once:
// StatsKernel's). kXTiles = XTiles(dim), 1 .. 5; kUnroll: MultiplyPairHalf.
template <int kXTiles, int kUnroll>
__global__ void __launch_bounds__(kStatsThreads, 2)
    KeptStatsDmmaKernel(const StatsModelView model, const PairsView pairs, const StatsItem* __restrict__ items,
                        const float* __restrict__ lse_max, const float* __restrict__ lse_log,
                        double* __restrict__ partials, const ScoresView scores) {
  using namespace stats_dmma_detail;
  const StatsItem item = items[blockIdx.x];
  if (model.single_tile[item.tile] != 0) return;
  float* shared = stats_detail::DynamicShared();
  const int dim = model.dim;
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int row0 = 16 * (warp & 3), half = warp >> 2;
  // (A function of the parity, not an array of two: an array indexed at
  // run time would live in local memory.)
  auto buffer = [&](int parity) { return PairTileBuffer::At(shared + parity * BufferFloats(kXTiles), kXTiles); };
  for (int b = 0; b < 2; ++b) {  // x rows past the dimension: zero for good
    float* x = buffer(b).x;
    for (int i = dim * kPairPitch + t; i < 8 * kXTiles * kPairPitch; i += kStatsThreads) x[i] = 0.0f;
  }
  const int64_t column = int64_t{model.tile_in_state[item.tile]} * kTile;
  PrefetchPairTile(scores, pairs, lse_max, lse_log, dim, item.pair_begin,
                   min(kPairsPerTile, item.pair_end - item.pair_begin), column, buffer(0), t);

  double acc[2 * kXTiles][4];
  double occ[2] = {0.0, 0.0};
#pragma unroll
  for (int j = 0; j < 2 * kXTiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0;
  int i = 0;
  for (int pb = item.pair_begin; pb < item.pair_end; pb += kPairsPerTile, ++i) {
    const int n = min(kPairsPerTile, item.pair_end - pb);
    if (pb + kPairsPerTile < item.pair_end) {
      PrefetchPairTile(scores, pairs, lse_max, lse_log, dim, pb + kPairsPerTile,
                       min(kPairsPerTile, item.pair_end - pb - kPairsPerTile), column, buffer((i + 1) & 1), t);
      stats_detail::WaitAsync<1>();  // tile i has landed (tile i + 1 may still be in flight)
    } else {
      stats_detail::WaitAsync<0>();
    }
    __syncthreads();  // tile i visible to all
    float tile_occ[2] = {0.0f, 0.0f};
    MultiplyPairHalf<kXTiles, kUnroll>(buffer(i & 1), n, row0, half, lane, acc, tile_occ);
    occ[0] += tile_occ[0];
    occ[1] += tile_occ[1];
    __syncthreads();  // all done with buffer i & 1 before it is refilled
  }

  // The second pair half hands its sums over (the buffers are free now).
  double* handover = reinterpret_cast<double*>(shared) + (warp & 3) * 32 * (8 * kXTiles + 2);
  if (half == 1) {
#pragma unroll
    for (int j = 0; j < 2 * kXTiles; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) handover[(4 * j + c) * 32 + lane] = acc[j][c];
    }
    handover[(8 * kXTiles) * 32 + lane] = occ[0];
    handover[(8 * kXTiles + 1) * 32 + lane] = occ[1];
  }
  __syncthreads();
  if (half == 1) return;
#pragma unroll
  for (int j = 0; j < 2 * kXTiles; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[j][c] += handover[(4 * j + c) * 32 + lane];
  }
  occ[0] += handover[(8 * kXTiles) * 32 + lane];
  occ[1] += handover[(8 * kXTiles + 1) * 32 + lane];

  const int group = lane >> 2, thread = lane & 3;
  const int row_doubles = 1 + 2 * dim;
  double* out = partials + static_cast<int64_t>(item.slot) * kTile * row_doubles;
#pragma unroll
  for (int r = 0; r < 2; ++r) {  // the occupancy: the four pair threads' sums, in a fixed order
    double o = occ[r];
    o += ShuffleXor(o, 1);
    o += ShuffleXor(o, 2);
    if (thread == 0) out[(row0 + group + 8 * r) * row_doubles] = o;
  }
#pragma unroll
  for (int j = 0; j < kXTiles; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int g = row0 + group + 8 * (c >> 1), d = 8 * j + 2 * thread + (c & 1);
      if (d < dim) {
        out[g * row_doubles + 1 + d] = acc[j][c];
        out[g * row_doubles + 1 + dim + d] = acc[kXTiles + j][c];
      }
    }
  }
}

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_DMMA_KERNEL_CUH_
