// The tensor-core (3xTF32) statistics kernels: the same two passes, work
// items and float64 partials as stats_kernels.cuh, with both products on
// mma.sync m16n8k8 TF32 tiles (kernels/cuda/internal/tf32_mma.cuh) instead
// of FFMAs. Launched by stats_tc_kernels.cu; chosen by ChooseStatsKernel
// (stats_policy.h), which never picks them on its own: on the H200 they
// are 10-20% slower than the float32 kernels (docs/PERFORMANCE.md), so they
// are opt-in (--backend cuda/tf32x3) for devices where mma.sync is the
// full-rate tensor path (sm_80-89, unmeasured).
//
// Every operand is split on the fly into a TF32 big part and the TF32 of
// its rest, and each product is small x big + big x small + big x big into
// one float32 accumulator: float32-class products (the small x small term,
// about 2^-22 of the product, is dropped) at tensor-core rates.
//
// Per 64-pair tile of an item (one tile of 64 Gaussians), 8 warps:
//   scoring, S = [1, y, y^2] . [K; u; v] (y = x - c): warp w scores pairs
//     16 (w % 4) .. + 15 against Gaussians 32 (w / 4) .. + 31 (4 n-tiles);
//     A = the pairs' rows of `ya` ([pair][k] in shared memory), B = the
//     parameter tile ([Gaussian][k], the same layout), k = 0 .. cols - 1;
//   posteriors gamma = w e^(S - lse) from the C fragments into `gam`
//     ([Gaussian][pair]), which transposes them for the second product;
//   statistics, acc[g][k] += sum_p gamma[g][p] x~[p][k] with x~ = [1, x, x^2]
//     raw (so column 0 is the occupancy and the row is Kaldi's [occ, s1, s2]
//     of the partial slot): warp w owns Gaussians 16 (w % 4) .. + 15 and the
//     column tiles w / 4, w / 4 + 2, ...; B = `xt` ([k][pair]).
// The float32 accumulators are added into the item's float64 partial slot
// every kStatsFlushTilesAlt tiles (each element by the one lane that holds
// it: no races, a fixed order), as StatsKernel's flush variant does.
//
// Shared-memory pitches: [row][k] arrays at cols + 4 floats and [row][pair]
// arrays at kPairPitch (68): every fragment load of a warp (8 rows x 4
// columns) and every store of C fragments into `gam` hits 32 banks.
//
// Padding Gaussians carry K = kTcPaddingGconst (-2^127, exact in TF32: the
// float32 kernels' -FLT_MAX rounds to -inf in TF32 and its rest would be
// NaN), so they score -2^127 and get posterior 0.
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TC_KERNELS_CUH_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TC_KERNELS_CUH_

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "kernels/train/cuda/stats_kernels.cuh"

#if defined(__CUDACC__)
#include "kernels/cuda/internal/tf32_mma.cuh"
#endif

namespace gmmscore {
namespace train_cuda {
namespace stats_tc_detail {

inline constexpr int kTcWarps = kStatsThreads / 32;
static_assert(kTcWarps == 8 && kPairsPerTile == 64, "the warp roles assume 8 warps and 64-pair tiles");

__host__ __device__ constexpr int RowPitch(int cols) { return cols + 4; }

// Shared-memory floats of each kernel (same carving order as below).
__host__ __device__ constexpr int64_t TcLseSharedFloats(int dim) {
  return 3 * int64_t{kTcTile} * RowPitch(TcCols(dim)) + stats_detail::Round4(dim) + kPairsPerTile +
         4 * kPairsPerTile;
}
__host__ __device__ constexpr int64_t TcStatsSharedFloats(int dim) {
  return 2 * int64_t{kTcTile} * RowPitch(TcCols(dim)) + int64_t{TcCols(dim)} * kPairPitch +
         int64_t{kTcTile} * kPairPitch + stats_detail::Round4(dim) + 4 * kPairsPerTile + 4 * kPairsPerTile;
}

#if defined(__CUDACC__)
// big = TF32(v), small = TF32(v - big).
__device__ __forceinline__ void SplitTf32(float v, uint32_t& big, uint32_t& small) {
  big = ToTf32(v);
  small = ToTf32(v - __uint_as_float(big));
}
#else
inline void SplitTf32(float v, uint32_t& big, uint32_t& small) { EmulatedSplitTf32(v, big, small); }
inline void MmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) { EmulatedMmaTf32(d, a, b0, b1); }
#endif

// d += a * b in 3xTF32 (a, b given as split parts).
__device__ __forceinline__ void Mma3xTf32(float (&d)[4], const uint32_t (&a_big)[4], const uint32_t (&a_small)[4],
                                          uint32_t b_big0, uint32_t b_big1, uint32_t b_small0, uint32_t b_small1) {
  MmaTf32(d, a_small, b_big0, b_big1);
  MmaTf32(d, a_big, b_small0, b_small1);
  MmaTf32(d, a_big, b_big0, b_big1);
}

// The A fragment at rows row0 (+8) and columns col0 (+4) of a [row][col]
// array of pitch `pitch`, split.
__device__ __forceinline__ void LoadSplitA(const float* base, int pitch, int row0, int col0, int group, int thread,
                                           uint32_t (&big)[4], uint32_t (&small)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    SplitTf32(base[(row0 + group + (r & 1) * 8) * pitch + col0 + thread + (r >> 1) * 4], big[r], small[r]);
  }
}

// The B fragment of k rows k0 .. k0 + 7 and column n0 + group of an array
// stored [n][k] with pitch `pitch`, split.
__device__ __forceinline__ void LoadSplitB(const float* base, int pitch, int n0, int k0, int group, int thread,
                                           uint32_t (&big)[2], uint32_t (&small)[2]) {
  const float* p = base + (n0 + group) * pitch + k0 + thread;
  SplitTf32(p[0], big[0], small[0]);
  SplitTf32(p[4], big[1], small[1]);
}

// Copies one parameter tile (kTcTile rows of `cols` floats, contiguous in
// global memory) into shared rows of pitch cols + 4, 16 bytes per cp.async,
// as one commit group (an ordinary copy on the host emulation and before
// sm_80, where these kernels are never launched).
__device__ __forceinline__ void CopyTileRowsAsync(float* shared, const float* global, int cols, int thread) {
  const int floats = kTcTile * cols;
  for (int i = thread * 4; i < floats; i += kStatsThreads * 4) {
    const int row = i / cols;
    float* to = shared + row * RowPitch(cols) + (i - row * cols);
#if defined(__CUDACC__) && __CUDA_ARCH__ >= 800
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(to));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global + i));
#elif defined(__CUDACC__)
    *reinterpret_cast<float4*>(to) = __ldcg(reinterpret_cast<const float4*>(global + i));
#else
    EmulatedCopy(to, global + i, 4, 0, 1);
#endif
  }
#if defined(__CUDACC__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// ya[p][k] = [1, y, y^2, 0 ...] (y = x - center) for the tile's 64 pairs,
// four threads per pair; with xt, also xt[k][p] = [1, x, x^2, 0 ...] raw
// (moments of raw features, see StageFrames). Pairs without a frame (-1)
// stage zeros.
__device__ __forceinline__ void StageTcFrames(const float* __restrict__ frames, int dim, int cols, const int* frame_s,
                                              const float* center, float* ya, float* xt, int thread) {
  constexpr int kBatch = 11;  // loads in flight before the stores (a store between loads would serialise them)
  const int p = thread >> 2;
  const int frame = frame_s[p];
  const float* row = frames + static_cast<int64_t>(frame < 0 ? 0 : frame) * dim;
  for (int k0 = thread & 3; k0 < cols; k0 += 4 * kBatch) {
    float raw[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int k = k0 + 4 * i;
      const int d = k <= dim ? k - 1 : k - 1 - dim;
      raw[i] = frame >= 0 && k >= 1 && k <= 2 * dim ? __ldg(row + d) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int k = k0 + 4 * i;
      if (k >= cols) break;
      float x = 0.0f, y = 0.0f;
      if (frame >= 0 && k <= 2 * dim) {
        if (k == 0) {
          x = y = 1.0f;
        } else {
          const int d = k <= dim ? k - 1 : k - 1 - dim;
          const float centred = raw[i] - center[d];
          x = k <= dim ? raw[i] : raw[i] * raw[i];
          y = k <= dim ? centred : centred * centred;
        }
      }
      ya[p * RowPitch(cols) + k] = y;
      if (xt != nullptr) xt[k * kPairPitch + p] = x;
    }
  }
}

// score[n][c] for this warp's 16 pairs (pair0 ..) against its 4 n-tiles of
// Gaussians (g0 ..): c = 0, 1 are pair pair0 + group and Gaussians
// g0 + 8n + 2 thread (+1); c = 2, 3 the same for pair pair0 + group + 8.
// The MMA order is fixed, so both kernels get the same bits.
__device__ __forceinline__ void ScoreTcTile(const float* tile, const float* ya, int cols, int pair0, int g0,
                                            int group, int thread, float (&score)[4][4]) {
  const int pitch = RowPitch(cols);
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int c = 0; c < 4; ++c) score[n][c] = 0.0f;
  }
  for (int k0 = 0; k0 < cols; k0 += 8) {
    uint32_t a_big[4], a_small[4];
    LoadSplitA(ya, pitch, pair0, k0, group, thread, a_big, a_small);
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      uint32_t b_big[2], b_small[2];
      LoadSplitB(tile, pitch, g0 + 8 * n, k0, group, thread, b_big, b_small);
      Mma3xTf32(score[n], a_big, a_small, b_big[0], b_big[1], b_small[0], b_small[1]);
    }
  }
}

// Merges the running (max, sum) of row `h` over the 4 lanes of a quad and,
// from lane thread 0, stores it at red[half][pair] (max) and
// red[2 * 64 + half * 64 + pair] (sum).
__device__ __forceinline__ void StoreQuadLogSum(float max, float sum, int half, int pair, int thread, float* red) {
#pragma unroll
  for (int offset = 1; offset <= 2; offset <<= 1) {
    const float other_max = __shfl_xor_sync(0xffffffffu, max, offset);
    const float other_sum = __shfl_xor_sync(0xffffffffu, sum, offset);
    stats_detail::MergeLogSum(other_max, other_sum, max, sum);
  }
  if (thread == 0) {
    red[half * kPairsPerTile + pair] = max;
    red[2 * kPairsPerTile + half * kPairsPerTile + pair] = sum;
  }
}

// Pair p's log-sum-exp from the two halves' (max, sum) in `red`: max and
// log(sum) (0 for an empty sum).
__device__ __forceinline__ void CombineHalves(const float* red, int p, float& max, float& log_sum) {
  const float m0 = red[p], m1 = red[kPairsPerTile + p];
  const float s0 = red[2 * kPairsPerTile + p], s1 = red[3 * kPairsPerTile + p];
  const float m = fmaxf(m0, m1);
  const float s = s0 * stats_detail::FastExp(m0 - m) + s1 * stats_detail::FastExp(m1 - m);
  max = m;
  log_sum = s > 0.0f ? __logf(s) : 0.0f;
}

// Folds a warp's score[4][4] into the running (max, sum) of its two rows.
__device__ __forceinline__ void FoldScores(const float (&score)[4][4], float (&run_max)[2], float (&run_sum)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float row[8] = {score[0][2 * h], score[0][2 * h + 1], score[1][2 * h], score[1][2 * h + 1],
                          score[2][2 * h], score[2][2 * h + 1], score[3][2 * h], score[3][2 * h + 1]};
    stats_detail::AddToLogSum(row, run_max[h], run_sum[h]);
  }
}

}  // namespace stats_tc_detail

// One CTA per LseItem (up to 64 pairs of one state against every tile of
// it), parameter tiles double-buffered through cp.async. Each lane keeps a
// running (max, sum) for its two pairs over its Gaussian columns; quads,
// then the two Gaussian halves, merge at the end.
// (static, as stats_kernels.cuh's non-template kernels: each unit that
// includes the header keeps its own)
static __global__ void __launch_bounds__(kStatsThreads, 2)
    TcLseKernel(const StatsModelView model, const PairsView pairs, const LseItem* __restrict__ items,
                float* __restrict__ lse_max, float* __restrict__ lse_log) {
  using namespace stats_tc_detail;
  float* shared = stats_detail::DynamicShared();
  const int dim = model.dim;
  const int cols = TcCols(dim);
  const int tile_floats = kTcTile * RowPitch(cols);
  float* buffer0 = shared;
  float* buffer1 = buffer0 + tile_floats;
  float* ya = buffer1 + tile_floats;
  float* center = ya + tile_floats;
  int* frame_s = reinterpret_cast<int*>(center + stats_detail::Round4(dim));
  float* red = reinterpret_cast<float*>(frame_s + kPairsPerTile);

  const LseItem item = items[blockIdx.x];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int group = lane >> 2, thread = lane & 3;
  const int pair0 = 16 * (warp & 3), half = warp >> 2;
  const int n = item.pair_end - item.pair_begin;
  const int64_t global_tile = int64_t{kTcTile} * cols;
  const float* first = model.tc_tiles + static_cast<int64_t>(item.first_tile) * global_tile;
  CopyTileRowsAsync(buffer0, first, cols, t);
  if (t < kPairsPerTile) frame_s[t] = t < n ? stats_detail::RecordOf(pairs, item.pair_begin + t).frame : -1;
  for (int d = t; d < dim; d += kStatsThreads) center[d] = model.center[d];
  __syncthreads();
  StageTcFrames(pairs.frames, dim, cols, frame_s, center, ya, nullptr, t);

  float run_max[2] = {-FLT_MAX, -FLT_MAX}, run_sum[2] = {0.0f, 0.0f};
  for (int j = 0; j < item.num_tiles; ++j) {
    if (j + 1 < item.num_tiles) {
      CopyTileRowsAsync((j & 1) ? buffer0 : buffer1, first + (j + 1) * global_tile, cols, t);
      stats_detail::WaitAsync<1>();
    } else {
      stats_detail::WaitAsync<0>();
    }
    __syncthreads();  // tile j (and, at j = 0, the staged frames) visible to all
    float score[4][4];
    ScoreTcTile((j & 1) ? buffer1 : buffer0, ya, cols, pair0, 32 * half, group, thread, score);
    FoldScores(score, run_max, run_sum);
    __syncthreads();  // all done with this buffer before iteration j + 1 refills it
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) StoreQuadLogSum(run_max[h], run_sum[h], half, pair0 + group + 8 * h, thread, red);
  __syncthreads();
  if (t < n) {
    float m, l;
    CombineHalves(red, t, m, l);
    lse_max[item.pair_begin + t] = m;
    lse_log[item.pair_begin + t] = l;
  }
}

// One CTA per StatsItem (see the file comment). kSteps bounds the
// k-steps of the scoring product (TcCols(dim) / 8 <= kSteps), and so the
// column tiles of the statistics product, kSteps of them, ceil(kSteps / 2)
// per warp.
template <int kSteps>
__global__ void __launch_bounds__(kStatsThreads, 2)
    TcStatsKernel(const StatsModelView model, const PairsView pairs, const StatsItem* __restrict__ items,
                  float* __restrict__ lse_max, float* __restrict__ lse_log, double* __restrict__ partials) {
  using namespace stats_tc_detail;
  constexpr int kColumnTiles = (kSteps + 1) / 2;
  float* shared = stats_detail::DynamicShared();
  const int dim = model.dim;
  const int cols = TcCols(dim);
  const int steps = cols / 8;
  const int pitch = RowPitch(cols);
  float* tile = shared;
  float* ya = tile + kTcTile * pitch;
  float* xt = ya + kTcTile * pitch;           // [cols][kPairPitch]
  float* gam = xt + cols * kPairPitch;        // [kTcTile][kPairPitch]
  float* center = gam + kTcTile * kPairPitch;
  int* frame_s = reinterpret_cast<int*>(center + stats_detail::Round4(dim));
  float* weight_s = reinterpret_cast<float*>(frame_s + kPairsPerTile);
  float* max_s = weight_s + kPairsPerTile;
  float* log_s = max_s + kPairsPerTile;
  float* red = log_s + kPairsPerTile;         // 4 x kPairsPerTile

  const StatsItem item = items[blockIdx.x];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int group = lane >> 2, thread = lane & 3;
  const int pair0 = 16 * (warp & 3), half = warp >> 2;     // scoring roles
  const int g_rows = 16 * (warp & 3), first_ct = warp >> 2;  // statistics roles
  const bool fused = model.single_tile[item.tile] != 0;
  const int row_doubles = 1 + 2 * dim;
  double* out = partials + static_cast<int64_t>(item.slot) * kTcTile * row_doubles;
  CopyTileRowsAsync(tile, model.tc_tiles + static_cast<int64_t>(item.tile) * kTcTile * cols, cols, t);
  for (int d = t; d < dim; d += kStatsThreads) center[d] = model.center[d];
  stats_detail::WaitAsync<0>();  // visible after the loop's first barrier

  float acc[kColumnTiles][4];
#pragma unroll
  for (int i = 0; i < kColumnTiles; ++i) {
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[i][c] = 0.0f;
  }
  // Adds the float32 sums into the partial slot (`first`: it holds nothing
  // yet) and restarts them.
  auto flush = [&](bool first) {
#pragma unroll
    for (int i = 0; i < kColumnTiles; ++i) {
      const int ct = first_ct + 2 * i;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int row = g_rows + group + (c >> 1) * 8;
        const int column = 8 * ct + 2 * thread + (c & 1);
        if (ct < steps && column < row_doubles) {
          double* at = out + row * row_doubles + column;
          *at = (first ? 0.0 : *at) + static_cast<double>(acc[i][c]);
        }
        acc[i][c] = 0.0f;
      }
    }
  };

  int pending = 0;
  bool first = true;
  for (int pb = item.pair_begin; pb < item.pair_end; pb += kPairsPerTile) {
    const int n = min(kPairsPerTile, item.pair_end - pb);
    __syncthreads();  // the previous tile's products are done with every array
    stats_detail::LoadPairArrays(pairs, pb, n, fused, lse_max, lse_log, frame_s, weight_s, max_s, log_s, t);
    __syncthreads();
    StageTcFrames(pairs.frames, dim, cols, frame_s, center, ya, xt, t);
    __syncthreads();

    float score[4][4];
    ScoreTcTile(tile, ya, cols, pair0, 32 * half, group, thread, score);
    if (fused) {  // the whole state is in this tile: its log-sum-exp here
      float run_max[2] = {-FLT_MAX, -FLT_MAX}, run_sum[2] = {0.0f, 0.0f};
      FoldScores(score, run_max, run_sum);
#pragma unroll
      for (int h = 0; h < 2; ++h) StoreQuadLogSum(run_max[h], run_sum[h], half, pair0 + group + 8 * h, thread, red);
      __syncthreads();
      if (t < kPairsPerTile) {
        float m, l;
        CombineHalves(red, t, m, l);
        max_s[t] = m;
        log_s[t] = l;
        if (t < n) {
          lse_max[pb + t] = m;
          lse_log[pb + t] = l;
        }
      }
      __syncthreads();
    }

    // Posteriors into gam[g][p]; 0 by select for pairs beyond the tile.
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int p = pair0 + group + (c >> 1) * 8;
      const float m = max_s[p], l = log_s[p], w = weight_s[p];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int g = 32 * half + 8 * nt + 2 * thread + (c & 1);
        const float e = stats_detail::FastExp((score[nt][c] - m) - l);
        gam[g * kPairPitch + p] = p < n ? w * e : 0.0f;
      }
    }
    __syncthreads();

    // acc[g][k] += sum_p gamma[g][p] x~[p][k] over the tile's pairs, 8 at a time.
    const int pair_steps = (n + 7) >> 3;
    for (int ks = 0; ks < pair_steps; ++ks) {
      uint32_t a_big[4], a_small[4];
      LoadSplitA(gam, kPairPitch, g_rows, 8 * ks, group, thread, a_big, a_small);
#pragma unroll
      for (int i = 0; i < kColumnTiles; ++i) {
        const int ct = first_ct + 2 * i;
        if (ct < steps) {
          uint32_t b_big[2], b_small[2];
          LoadSplitB(xt, kPairPitch, 8 * ct, 8 * ks, group, thread, b_big, b_small);
          Mma3xTf32(acc[i], a_big, a_small, b_big[0], b_big[1], b_small[0], b_small[1]);
        }
      }
    }
    if (++pending == kStatsFlushTilesAlt) {
      flush(first);
      first = false;
      pending = 0;
    }
  }
  if (pending > 0 || first) flush(first);
}

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_TC_KERNELS_CUH_
