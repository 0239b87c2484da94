// The statistics kernel of kept scores on Hopper's float64 tensor cores
// (KeptStatsDmmaKernel): the same items, partial slots and posteriors as
// KeptStatsKernel (stats_kernels.cuh), with the statistics GEMM
//   acc[g][c] += sum_p gamma[g][p] x~[p][c],  x~ = [x, x^2] (raw features)
// on mma.sync m16n8k4 .f64 tiles instead of float32 FFMAs. On sm_90 those
// run at the float32 FFMA rate (measured on an H100: 66.5 TFLOP/s against
// 65 for FFMAs, stats_policy.h), but one instruction does 512 FMAs, reads
// its operands from registers, and the products and sums are float64:
// gamma and x are float32 values, so gamma x and x^2 are exact, gamma x^2
// is rounded once in float64, and every sum is float64 from the first
// product.
//
// Per CTA (256 threads, 8 warps), one item: pairs [pair_begin, pair_end) of
// one target against one 64-Gaussian tile of its state.
//   Warp w owns Gaussian rows 16 (w % 4) .. + 15 (one m16 tile) and the
//   pair half w / 4 of every 64-pair tile (up to 8 k4 steps of 4 pairs);
//   each lane holds the tile's 2 kXTiles accumulators of 8 columns (the x
//   columns 8j .. 8j + 7 and their squares).
//   Per k4 step a lane computes its two A elements, gamma = w e^(s - lse)
//   of (Gaussian group / group + 8, its pair) from the kept score, and loads
//   one x per x tile for its B element (that pair, column group), squaring
//   it for the x^2 tile.
//   Only live pairs need their MMAs: those with a nonzero posterior (in
//   float32) for one of the warp's 16 Gaussians; a dead pair's would add
//   exact zeros. In a large mixture most posteriors underflow (bench data,
//   M = 2048: 18 nonzero of 2048 per frame, so about 1 live pair in 8 per
//   warp), so a warp whose previous tile had few live pairs finds this
//   tile's first and packs them four to a k4 step (MultiplyLivePairs); one
//   whose previous tile had many multiplies every pair in order
//   (MultiplyAllPairs). Both give the same sums up to the float64 rounding
//   of the regrouped steps.
//   Pair tiles are double-buffered: tile i + 1's scores, log-sum-exps,
//   records and frames land (cp.async) while tile i is multiplied.
//   At the end the second pair half's warps hand their sums to the first
//   through shared memory; those add them (a fixed order) and write the
//   item's float64 partial: occupancy (summed from the A elements), then
//   the x and x^2 sums, as the other statistics kernels lay it out.
// Pairs past the item's end get gamma = 0 by select and x = 0 (never
// 0 x NaN), idle lanes of a packed step short of four live pairs gamma = 0
// and x = 0 by select; x rows past the dimension are zero.
//
// The log-sum-exp kernel of the same path (LseDmmaKernel) scores on the
// same tensor cores: per LseItem (up to 64 pairs of one target against
// every 64-Gaussian tile of its state), score[g][p] = sum_k W[g][k] Y[k][p]
// with W = [K, u, v] (the float32 parameter tiles, double-buffered through
// cp.async, widened as their fragments load) and Y = [1, y, y^2] of the
// pairs (y = x - centre in float64, staged once per item): float64 products
// and sums, then rounded to float32 for the kept scores and the running
// log-sum-exp. Warp w owns Gaussian rows 16 (w % 4) .. + 15 and pairs
// 32 (w / 4) .. + 31 (4 n8 tiles); per k4 step 2 float + 4 float64 shared
// loads feed 4 MMAs. (Its scores are not the float32 kernels' bits; a
// statistics kernel only reads the scores and log-sum-exps of the one LSE
// kernel that ran, so either statistics kernel works with either.)
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
// new in Hopper); builds for older architectures trap, and the launchers
// refuse them (Fp64MmaKernelsBuiltFor).
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
__device__ __forceinline__ uint32_t Ballot(bool v) { return __ballot_sync(0xffffffffu, v); }
__device__ __forceinline__ int Popcount(uint32_t v) { return __popc(v); }
__device__ __forceinline__ int LowestBit(uint32_t v) { return __ffs(v) - 1; }
__device__ __forceinline__ void SyncWarp() { __syncwarp(); }
// A kept score, written once and read once (evict-first, as StreamStore).
__device__ __forceinline__ void StoreScore(float* p, float v) { __stcs(p, v); }
#else
inline void MmaF64(double (&d)[4], double a0, double a1, double b) { EmulatedMmaF64(d, a0, a1, b); }
inline double ShuffleXor(double v, int mask) { return EmulatedShuffleXorDouble(v, mask); }
inline uint32_t Ballot(bool v) { return EmulatedBallot(v); }
inline int Popcount(uint32_t v) { return __builtin_popcount(v); }
inline int LowestBit(uint32_t v) { return __builtin_ctz(v); }
inline void SyncWarp() { EmulatedSyncWarp(); }
inline void StoreScore(float* p, float v) { *p = v; }
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

// The posteriors gamma = w e^(s - lse) of lane (group, thread) for pair p
// of a buffered tile of n pairs: Gaussians row0 + group and + 8. Pairs at or
// past n get 0 by select (what lies there was never copied).
__device__ __forceinline__ void LanePosteriors(const PairTileBuffer& b, int n, int row0, int group, int p,
                                               float& g0, float& g1) {
  using stats_detail::FastExp;
  const float m = b.max[p], l = b.log[p], w = b.records[p].weight;
  const float* s = b.scores + p * kScorePitch + row0 + group;
  g0 = p < n ? w * FastExp((s[0] - m) - l) : 0.0f;
  g1 = p < n ? w * FastExp((s[8] - m) - l) : 0.0f;
}

// The warp's vote on 4 pairs (4 step + thread): bit thread of the result is
// set when some lane of that pair has a nonzero (or NaN) posterior.
__device__ __forceinline__ uint32_t LiveOfStep(float g0, float g1) {
  uint32_t votes = Ballot(g0 != 0.0f || g1 != 0.0f);  // bit 4 group + thread
  votes |= votes >> 16;
  votes |= votes >> 8;
  votes |= votes >> 4;
  return votes & 0xFu;
}

// d += gamma x~ of one pair per lane: the 2 kXTiles MMAs of one k4 step.
// An idle lane (`used` false, gamma 0) multiplies x = 0: its pair's x may
// be anything (0 x inf would be NaN).
template <int kXTiles>
__device__ __forceinline__ void MultiplyStep(const PairTileBuffer& b, double a0, double a1, int p, int group,
                                             bool used, double (&acc)[2 * kXTiles][4]) {
#pragma unroll
  for (int j = 0; j < kXTiles; ++j) {
    const double x = used ? b.x[(8 * j + group) * kPairPitch + p] : 0.0f;
    MmaF64(acc[j], a0, a1, x);
    MmaF64(acc[kXTiles + j], a0, a1, x * x);
  }
}

// The warp's products over its pair half of one buffered tile of n pairs,
// two ways with the same sums up to float64 rounding (a dead pair, with no
// nonzero posterior for the warp's 16 Gaussians, adds exact zeros:
// 0 x finite x). Each returns how many of the 32 pairs were live, which
// picks the way for the warp's next tile (stats_policy.h,
// kFp64MmaPackedLivePairs): the tiles of an item are the same Gaussians
// over more frames.
//
// All pairs: k4 steps of 4 pairs in order, kUnroll at a time, each lane's
// posteriors computed as its MMAs need them, the live pairs counted on the
// way.
template <int kXTiles, int kUnroll>
__device__ __forceinline__ int MultiplyAllPairs(const PairTileBuffer& b, int n, int row0, int half, int lane,
                                                double (&acc)[2 * kXTiles][4], float (&occ)[2]) {
  const int group = lane >> 2, thread = lane & 3;
  int live = 0;
#pragma unroll(kUnroll)
  for (int step = 0; step < kHalfPairs / 4; ++step) {
    const int p = half * kHalfPairs + 4 * step + thread;
    float g0, g1;
    LanePosteriors(b, n, row0, group, p, g0, g1);
    occ[0] += g0;  // float32 over one tile (the FP64 pipe is the MMAs')
    occ[1] += g1;
    live += Popcount(LiveOfStep(g0, g1));
    MultiplyStep<kXTiles>(b, g0, g1, p, group, /*used=*/true, acc);
  }
  return live;
}

// Live pairs only: pass 1 turns each lane's 16 scores into posteriors in
// place (each score is read and written by exactly one lane) and the warp
// votes which pairs are live; pass 2 packs those four to a k4 step in pair
// order, kUnroll steps at a time: lane (group, thread) takes the step's
// (thread + 1)-th live pair, and a step short of four gives its idle lanes
// gamma = 0 and x = 0 by select.
template <int kXTiles, int kUnroll>
__device__ __forceinline__ int MultiplyLivePairs(const PairTileBuffer& b, int n, int row0, int half, int lane,
                                                 double (&acc)[2 * kXTiles][4], float (&occ)[2]) {
  const int group = lane >> 2, thread = lane & 3;
  float* gamma = b.scores + row0 + group;
  uint32_t live = 0;
#pragma unroll
  for (int step = 0; step < kHalfPairs / 4; ++step) {
    const int p = half * kHalfPairs + 4 * step + thread;
    float g0, g1;
    LanePosteriors(b, n, row0, group, p, g0, g1);
    gamma[p * kScorePitch] = g0;
    gamma[p * kScorePitch + 8] = g1;
    occ[0] += g0;
    occ[1] += g1;
    live |= LiveOfStep(g0, g1) << (4 * step);
  }
  SyncWarp();  // the lanes' posteriors visible to the warp
  const int live_pairs = Popcount(live);
  const int steps = (live_pairs + 3) / 4;
#pragma unroll(kUnroll)
  for (int step = 0; step < steps; ++step) {
    uint32_t mine = live;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      if (k < thread) mine &= mine - 1;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) live &= live - 1;  // the next step's pairs
    const bool used = mine != 0;
    const int p = half * kHalfPairs + (used ? LowestBit(mine) : 0);
    const double a0 = used ? gamma[p * kScorePitch] : 0.0f, a1 = used ? gamma[p * kScorePitch + 8] : 0.0f;
    MultiplyStep<kXTiles>(b, a0, a1, p, group, used, acc);
  }
  return live_pairs;
}

// --- The log-sum-exp kernel. --------------------------------------------

// Rows of W and Y: [1, y (dim), y^2 (dim)] padded with zero rows to whole k4 steps.
__host__ __device__ constexpr int LseSteps(int dim) { return (2 * dim + 1 + 3) / 4; }
// W rows [k][Gaussian] at pitch 72 floats: a warp's A loads (4 k x 8
// Gaussians) fall in 32 different banks. Y rows [k][pair] at pitch 68
// doubles: a half-warp's B loads (4 k x 4 pairs) in 16 different bank pairs.
inline constexpr int kWPitch = kTile + 8;
inline constexpr int kYPitch = kPairsPerTile + 4;
__host__ __device__ constexpr int64_t LseSharedFloats(int dim) {
  return 2 * 4 * LseSteps(dim) * kWPitch + 2 * 4 * LseSteps(dim) * kYPitch + 2 * 4 * kPairsPerTile;
}

// Copies parameter tile `from` (2 dim + 1 rows of 64 floats) into rows of
// pitch kWPitch, 16 bytes per cp.async, one commit group.
__device__ __forceinline__ void CopyParameterTile(float* to, const float* from, int dim, int thread) {
  const int chunks = (2 * dim + 1) * (kTile / 4);
  for (int c = thread; c < chunks; c += kStatsThreads) {
    const int row = c / (kTile / 4), q = c % (kTile / 4);
    stats_detail::CopyAsyncBytes<16>(to + row * kWPitch + 4 * q, from + row * kTile + 4 * q);
  }
  stats_detail::CommitAsync();
}

}  // namespace stats_dmma_detail

// One CTA per LseItem (see the file comment); writes every score of the
// item's pairs to `scores` and their log-sum-exps to lse_max / lse_log.
// (static: not a template, and the header may be included by several files.)
static __global__ void __launch_bounds__(kStatsThreads, 2)
    LseDmmaKernel(const StatsModelView model, const PairsView pairs, const LseItem* __restrict__ items,
                  float* __restrict__ lse_max, float* __restrict__ lse_log, const ScoresView scores) {
  using namespace stats_dmma_detail;
  using stats_detail::MergeLogSum;
  const LseItem item = items[blockIdx.x];
  float* shared = stats_detail::DynamicShared();
  const int dim = model.dim, steps = LseSteps(dim), rows = 4 * steps;
  float* w_buffers = shared;                                                // [2][rows][kWPitch]
  double* y = reinterpret_cast<double*>(w_buffers + 2 * rows * kWPitch);  // [rows][kYPitch]
  float* red_max = reinterpret_cast<float*>(y + rows * kYPitch);           // [4][64]
  float* red_sum = red_max + 4 * kPairsPerTile;
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31, group = lane >> 2, thread = lane & 3;
  const int block = warp & 3, half = warp >> 2;
  const int n = item.pair_end - item.pair_begin;
  const int tile_floats = kTile * (2 * dim + 1);
  const float* first = model.tiles + static_cast<int64_t>(item.first_tile) * tile_floats;
  CopyParameterTile(w_buffers, first, dim, t);
  for (int b = 0; b < 2; ++b) {  // W rows past 2 dim + 1: zero for good
    for (int i = (2 * dim + 1) * kWPitch + t; i < rows * kWPitch; i += kStatsThreads) w_buffers[b * rows * kWPitch + i] = 0.0f;
  }
  // Y = [1, y, y^2] of the item's pairs (four threads per pair, each x read
  // once for its y and y^2 rows), zero columns past n and zero rows past 2 dim.
  static_assert(kStatsThreads == 4 * kPairsPerTile, "four staging threads per pair");
  {
    const int p = t >> 2;
    const int64_t frame = p < n ? stats_detail::RecordOf(pairs, item.pair_begin + p).frame : -1;
    if ((t & 3) == 0) y[p] = frame >= 0 ? 1.0 : 0.0;
    for (int d = t & 3; d < dim; d += 4) {
      const double centred = frame >= 0 ? static_cast<double>(pairs.frames[frame * dim + d]) - model.center[d] : 0.0;
      y[(1 + d) * kYPitch + p] = centred;
      y[(1 + dim + d) * kYPitch + p] = centred * centred;
    }
    for (int i = (2 * dim + 1) * kPairsPerTile + t; i < rows * kPairsPerTile; i += kStatsThreads) {
      y[(i / kPairsPerTile) * kYPitch + i % kPairsPerTile] = 0.0;
    }
  }

  float run_max[4][2], run_sum[4][2];  // per n8 tile and pair of the lane's two
#pragma unroll
  for (int j = 0; j < 4; ++j) run_max[j][0] = run_max[j][1] = -FLT_MAX, run_sum[j][0] = run_sum[j][1] = 0.0f;
  for (int j = 0; j < item.num_tiles; ++j) {
    if (j + 1 < item.num_tiles) {
      CopyParameterTile(w_buffers + ((j + 1) & 1) * rows * kWPitch, first + static_cast<int64_t>(j + 1) * tile_floats,
                        dim, t);
      stats_detail::WaitAsync<1>();  // tile j has landed (tile j + 1 may still be in flight)
    } else {
      stats_detail::WaitAsync<0>();
    }
    __syncthreads();  // tile j (and at j = 0 the staged Y) visible to all
    const float* w = w_buffers + (j & 1) * rows * kWPitch + 16 * block + group;
    const double* yb = y + 32 * half + group;
    double acc[4][4];
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.0;
#pragma unroll 4
    for (int s = 0; s < steps; ++s) {
      const int k = 4 * s + thread;
      const double a0 = w[k * kWPitch], a1 = w[k * kWPitch + 8];
#pragma unroll
      for (int q = 0; q < 4; ++q) MmaF64(acc[q], a0, a1, yb[k * kYPitch + 8 * q]);
    }
    // The tile's scores: kept, and into the lane's running log-sums.
    const int64_t column = int64_t{j} * kTile + 16 * block + group;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int p = 32 * half + 8 * q + 2 * thread + e;
        const float s0 = static_cast<float>(acc[q][e]), s1 = static_cast<float>(acc[q][2 + e]);
        if (p < n) {
          float* row = scores.data + (item.pair_begin + p) * scores.row_floats + column;
          StoreScore(row, s0);
          StoreScore(row + 8, s1);
        }
        const float pair_scores[2] = {s0, s1};
        stats_detail::AddToLogSum(pair_scores, run_max[q][e], run_sum[q][e]);
      }
    }
    __syncthreads();  // all done with buffer j & 1 before iteration j + 1 refills it
  }

  // Merge over the 8 lane groups (same pairs, other Gaussians), then over
  // the 4 Gaussian blocks, in a fixed order.
#pragma unroll
  for (int q = 0; q < 4; ++q) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float m = run_max[q][e], sum = run_sum[q][e];
#pragma unroll
      for (int mask = 4; mask < 32; mask <<= 1) {
        const float other_max = __shfl_xor_sync(0xffffffffu, m, mask);
        const float other_sum = __shfl_xor_sync(0xffffffffu, sum, mask);
        MergeLogSum(other_max, other_sum, m, sum);
      }
      if (group == 0) {
        const int p = 32 * half + 8 * q + 2 * thread + e;
        red_max[block * kPairsPerTile + p] = m;
        red_sum[block * kPairsPerTile + p] = sum;
      }
    }
  }
  __syncthreads();
  if (t < n) {
    float m = red_max[t], sum = red_sum[t];
#pragma unroll
    for (int b = 1; b < 4; ++b) MergeLogSum(red_max[b * kPairsPerTile + t], red_sum[b * kPairsPerTile + t], m, sum);
    lse_max[item.pair_begin + t] = m;
    lse_log[item.pair_begin + t] = sum > 0.0f ? __logf(sum) : 0.0f;
  }
}

// One CTA per StatsItem of a multi-tile state whose scores the LSE kernel
// kept, tiles of 64 Gaussians (CTAs of single-tile items return at once:
// StatsKernel's). kXTiles = XTiles(dim), 1 .. 5; kUnroll: the k4 steps
// MultiplyAllPairs and MultiplyLivePairs unroll.
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
  bool packed = true;  // the warp's way for its next tile (MultiplyAllPairs)
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
    const int live = packed ? MultiplyLivePairs<kXTiles, kUnroll>(buffer(i & 1), n, row0, half, lane, acc, tile_occ)
                            : MultiplyAllPairs<kXTiles, kUnroll>(buffer(i & 1), n, row0, half, lane, acc, tile_occ);
    packed = live <= kFp64MmaPackedLivePairs;
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
