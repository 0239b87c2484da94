// The CUDA statistics kernels: per pair, the log-sum-exp over its state's
// Gaussians (LseKernel), then per (pair range, Gaussian tile) item the
// posteriors and their float64 sums (StatsKernel). The posterior matrix is
// never written; with kept scores (ScoresView, stats_policy.h) the LSE
// kernel writes the chunk's scores, a bounded scratch, and the statistics
// kernel reads them instead of scoring again. Launched by stats_kernels.cu;
// tile shapes in stats_policy.h, work items in stats_work.h.
//
// Scoring (both kernels, the same code so the same scores): a tile of 64
// pairs, y = x - c centred while staged into shared memory as [dim][pair],
// against a tile of the state's Gaussians [K][u: dim x tile][v: dim x tile]
// (StatsTiles). Each of 256 threads holds 4 pairs x S Gaussians (S = tile/16)
// in registers: per dimension one float4 of y and two S-vectors of u, v feed
// 8S FFMAs as loglik = K + sum_d y (u + v y) (two FMAs per term, no y^2).
//
// Statistics (StatsKernel, or KeptStatsKernel reading kept scores instead
// of scoring), per 64-pair tile:
//   the tile scored as above;
//   gamma = w exp(score - lse) into shared memory [Gaussian][pair];
//   occupancy: each thread's 4 pairs summed, then across the 16 threads of
//     the same Gaussians by warp shuffle;
//   GEMM: acc[g][k] += sum_p gamma[g][p] x~[k][p], x~ = [x; x^2] (2D rows,
//     raw features restaged over the scoring rows, see StageFrames;
//     [row][pair] in shared memory), each thread 4 Gaussians x C columns,
//     four pairs per step (float4 loads of gamma and x~: 4 + C loads per 16C FFMAs);
//   the tile's float32 sums are then added into float64 registers, so the
//   float32 rounding covers 64 products and the item's sum stays exact to
//   float64 over any number of tiles.
// Each item writes its float64 partial (tile x (1 + 2D) doubles, [occ, s1,
// s2] per Gaussian) to its slot; ReducePartialsKernel sums each output's
// slots in a fixed order, so the statistics are the same bits every run.
//
// Numbers that do not fit: padding Gaussians score -FLT_MAX (stats_policy.h),
// running maxima start at -FLT_MAX, so no max is ever -inf and no inf - inf
// arises; a pair whose every score is -inf (features near 1.8e19) gets
// lse = -FLT_MAX and posteriors 0 rather than NaN. Pairs beyond a tile's end
// stage y = 0 and get gamma = 0 by select (never 0 * inf).
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_CUH_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_CUH_

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "kernels/train/cuda/stats_kernels.h"
#include "kernels/train/cuda/stats_policy.h"
#include "kernels/train/cuda/stats_work.h"

namespace gmmscore {
namespace train_cuda {
namespace stats_detail {

inline constexpr float kLog2E = 1.44269504088896341f;
// Threads sharing one group of scoring Gaussians (lanes t..t+15 of a warp).
inline constexpr int kScoreGroups = kStatsThreads / 16;

__host__ __device__ constexpr int Round4(int n) { return (n + 3) & ~3; }

// Shared-memory floats of each kernel (the launcher sizes the launch with
// these; the kernels carve their arrays in this order, each a multiple of 4
// floats so every array is 16-byte aligned).
__host__ __device__ constexpr int64_t LseSharedFloats(int dim, int tile) {
  return 2 * TileFloats(dim, tile) + int64_t{dim} * kPairPitch + 2 * kScoreGroups * kPairsPerTile +
         Round4(dim) + kPairsPerTile;
}
__host__ __device__ constexpr int64_t StatsSharedFloats(int dim, int tile, int columns) {
  return TileFloats(dim, tile) + int64_t{ColumnGroups(tile)} * columns * kPairPitch +
         int64_t{tile} * kPairPitch + Round4(dim) + 4 * kPairsPerTile;
}

#if defined(__CUDACC__)
// e^x as one FMUL and one MUFU.EX2 (ex2.approx.ftz: about 2^-22 relative;
// results under 2^-126 flush to 0; e^-inf = 0).
__device__ __forceinline__ float FastExp(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * kLog2E));
  return y;
}

// 16-byte asynchronous copies global -> shared (cp.async, sm_80+), so a
// tile of parameters lands while the CTA computes on the other one. Turing
// (sm_75) has no cp.async: there the copy is an ordinary load and store,
// done when CopyAsync returns, and WaitAsync has nothing to wait for (the
// callers' __syncthreads still orders the tile for the CTA).
__device__ __forceinline__ void CopyAsync(float* shared, const float* global, int floats, int thread) {
#if __CUDA_ARCH__ >= 800
  for (int i = thread * 4; i < floats; i += kStatsThreads * 4) {
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global + i));
  }
  asm volatile("cp.async.commit_group;\n" ::);
#else
  for (int i = thread * 4; i < floats; i += kStatsThreads * 4) {
    *reinterpret_cast<float4*>(shared + i) = __ldcg(reinterpret_cast<const float4*>(global + i));
  }
#endif
}
template <int kPending>
__device__ __forceinline__ void WaitAsync() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// One asynchronous copy of kBytes (4, 8 or 16, aligned so) global ->
// shared; CommitAsync closes the group WaitAsync waits for. Before sm_80
// an ordinary load and store.
template <int kBytes>
__device__ __forceinline__ void CopyAsyncBytes(void* shared, const void* global) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async sizes");
#if __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(address), "l"(global), "n"(kBytes));
#else
  if constexpr (kBytes == 4) *static_cast<float*>(shared) = *static_cast<const float*>(global);
  if constexpr (kBytes == 8) *static_cast<float2*>(shared) = *static_cast<const float2*>(global);
  if constexpr (kBytes == 16) *static_cast<float4*>(shared) = *static_cast<const float4*>(global);
#endif
}
__device__ __forceinline__ void CommitAsync() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// The launch's dynamic shared memory.
__device__ __forceinline__ float* DynamicShared() {
  extern __shared__ float4 shared4[];
  return reinterpret_cast<float*>(shared4);
}

// Kept scores are written once and read once: streaming (evict-first)
// stores, so they do not push the frames and parameter tiles out of L2.
template <int N>
__device__ __forceinline__ void StreamStore(float* p, const float (&v)[N]) {
  if constexpr (N == 4) {
    __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
  } else {
    __stcs(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
  }
}
#else
// Host emulation (stats_emulation_test.cc defines EmulatedExp and friends):
// the kernels' indexing checked on a machine without a GPU.
inline float FastExp(float x) { return EmulatedExp(x * kLog2E); }
inline void CopyAsync(float* shared, const float* global, int floats, int thread) {
  EmulatedCopy(shared, global, floats, thread, kStatsThreads);
}
template <int kPending>
inline void WaitAsync() {}
template <int kBytes>
inline void CopyAsyncBytes(void* shared, const void* global) {
  std::memcpy(shared, global, kBytes);
}
inline void CommitAsync() {}
inline float* DynamicShared() { return EmulatedShared(); }
template <int N>
inline void StreamStore(float* p, const float (&v)[N]) {
  for (int i = 0; i < N; ++i) p[i] = v[i];
}
#endif

// Pair `pair` of the chunk: its frame and weight (one 8-byte load).
__device__ __forceinline__ PairRecord RecordOf(const PairsView& pairs, int pair) {
  if (pairs.records == nullptr) return PairRecord{static_cast<int32_t>(pairs.first_frame + pair), 1.0f};
  const PairRecord record = pairs.records[pair];
  return record;
}

// The tile's pair arrays (threads 0..63, one pair each): frame and weight
// of pairs pb .. pb + n - 1 (frame -1, weight 0 beyond), and their
// log-sum-exp unless the state is fused (the kernel computes it then).
__device__ __forceinline__ void LoadPairArrays(const PairsView& pairs, int pb, int n, bool fused,
                                               const float* lse_max, const float* lse_log, int* frame_s,
                                               float* weight_s, float* max_s, float* log_s, int thread) {
  if (thread >= kPairsPerTile) return;
  const bool valid = thread < n;
  const PairRecord record = valid ? RecordOf(pairs, pb + thread) : PairRecord{-1, 0.0f};
  frame_s[thread] = record.frame;
  weight_s[thread] = record.weight;
  if (!fused) {
    max_s[thread] = valid ? lse_max[pb + thread] : 0.0f;
    log_s[thread] = valid ? lse_log[pb + thread] : 0.0f;
  }
}

template <int N>
__device__ __forceinline__ void LoadVector(const float* p, float (&out)[N]) {
  static_assert(N == 2 || N == 4, "scoring Gaussians per thread");
  if constexpr (N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  }
}

// y[d][p] = frames[frame_s[p]][d] - center[d] for the tile's 64 pairs (four
// threads per pair, four loads in flight each), for scoring. With kRaw, the
// GEMM's x~ rows instead: y[d][p] = x and y[dim + d][p] = x^2, uncentred,
// so that sum g x^2 is a sum of positive terms (converting centred sums to
// Kaldi's raw ones cancels where x is near 0 and the centre is not). Pairs
// without a frame (-1) stage 0.
template <bool kRaw>
__device__ __forceinline__ void StageFrameRows(const float* __restrict__ frames, int dim, int frame,
                                               const float* center, float* y, int thread) {
  const int p = thread >> 2;
  const float* row = frames + static_cast<int64_t>(frame < 0 ? 0 : frame) * dim;
#pragma unroll 4
  for (int d = thread & 3; d < dim; d += 4) {
    const float x = frame >= 0 ? __ldg(row + d) : 0.0f;
    const float value = kRaw || frame < 0 ? x : x - center[d];
    y[d * kPairPitch + p] = value;
    if constexpr (kRaw) y[(dim + d) * kPairPitch + p] = value * value;
  }
}
// The same, each pair's frame from the tile's frame array.
template <bool kRaw>
__device__ __forceinline__ void StageFrames(const float* __restrict__ frames, int dim, const int* frame_s,
                                            const float* center, float* y, int thread) {
  StageFrameRows<kRaw>(frames, dim, frame_s[thread >> 2], center, y, thread);
}

// score[q][i] = loglik of pair 4 pg + q under Gaussian S sgg + i of `tile`.
// The FMA sequence is fixed (K, then d = 0, 1, ...), so both kernels get
// the same bits for the same pair and Gaussian.
template <int kTile>
__device__ __forceinline__ void ScoreTile(const float* tile, const float* y, int dim, int pg, int sgg,
                                          float (&score)[4][kTile / 16]) {
  constexpr int kS = kTile / 16;
  const int g0 = sgg * kS;
  float k[kS];
  LoadVector(tile + g0, k);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
#pragma unroll
    for (int i = 0; i < kS; ++i) score[q][i] = k[i];
  }
  const float* u = tile + kTile + g0;
  const float* v = u + dim * kTile;
  const float* yp = y + 4 * pg;
#pragma unroll 4
  for (int d = 0; d < dim; ++d) {
    const float4 y4 = *reinterpret_cast<const float4*>(yp + d * kPairPitch);
    float uu[kS], vv[kS];
    LoadVector(u + d * kTile, uu);
    LoadVector(v + d * kTile, vv);
    const float yq[4] = {y4.x, y4.y, y4.z, y4.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
      for (int i = 0; i < kS; ++i) score[q][i] = fmaf(fmaf(vv[i], yq[q], uu[i]), yq[q], score[q][i]);
    }
  }
}

// Adds e^score[i] to the running sum e^max * sum (max >= -FLT_MAX always):
// one rescale and N exponentials.
template <int N>
__device__ __forceinline__ void AddToLogSum(const float (&score)[N], float& max, float& sum) {
  float local = score[0];
#pragma unroll
  for (int i = 1; i < N; ++i) local = fmaxf(local, score[i]);
  const float larger = fmaxf(max, local);
  float add = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) add += FastExp(score[i] - larger);
  sum = fmaf(sum, FastExp(max - larger), add);
  max = larger;
}

// Merges another running (max, sum) into (max, sum): both rescaled to the
// larger maximum.
__device__ __forceinline__ void MergeLogSum(float other_max, float other_sum, float& max, float& sum) {
  const float larger = fmaxf(max, other_max);
  sum = sum * FastExp(max - larger) + other_sum * FastExp(other_max - larger);
  max = larger;
}

// Kept scores (ScoresView) of a thread's 4 pairs x S Gaussians: pairs
// first_pair + 4 pg + q of the chunk, columns `column` + S sgg + i of their
// rows; pairs at or beyond `n` (past the tile's end) are skipped.
template <int kS>
__device__ __forceinline__ void StoreScores(const ScoresView& scores, int64_t first_pair, int n, int64_t column,
                                            int pg, int sgg, const float (&score)[4][kS]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int p = 4 * pg + q;
    if (p < n) StreamStore(scores.data + (first_pair + p) * scores.row_floats + column + sgg * kS, score[q]);
  }
}
// Merges the kScoreGroups partial (max, sum) of one pair, kPairsPerTile
// apart, in a fixed order: lse = max + log.
__device__ __forceinline__ void CombineLogSums(const float* red_max, const float* red_sum, float& max,
                                               float& log_sum) {
  float m = -FLT_MAX;
#pragma unroll
  for (int k = 0; k < kScoreGroups; ++k) m = fmaxf(m, red_max[k * kPairsPerTile]);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kScoreGroups; ++k) s = fmaf(red_sum[k * kPairsPerTile], FastExp(red_max[k * kPairsPerTile] - m), s);
  max = m;
  log_sum = s > 0.0f ? __logf(s) : 0.0f;
}

}  // namespace stats_detail

// One CTA per LseItem: up to 64 pairs against every tile of their state,
// three CTAs per SM (80 registers, no spills at sm_90; measured on the H100
// at D = 39, M = 2048, 2M frames: 17.0 ms against 17.3 ms with two CTAs),
// parameter tiles double-buffered through cp.async (tile j + 1 lands while
// tile j is scored). Each thread keeps a running (max, sum) for its 4 pairs
// over its Gaussians of every tile; the 16 groups merge once at the end.
// With kept scores, every tile's scores are also stored (StoreScores).
template <int kTile>
__global__ void __launch_bounds__(kStatsThreads, 3)
    LseKernel(const StatsModelView model, const PairsView pairs, const LseItem* __restrict__ items,
              float* __restrict__ lse_max, float* __restrict__ lse_log, const ScoresView scores) {
  using namespace stats_detail;
  constexpr int kS = kTile / 16;
  float* shared = DynamicShared();
  const int dim = model.dim;
  const int tile_floats = kTile * (1 + 2 * dim);
  float* buffer0 = shared;
  float* buffer1 = shared + tile_floats;
  float* y = shared + 2 * tile_floats;
  float* red_max = y + dim * kPairPitch;
  float* red_sum = red_max + kScoreGroups * kPairsPerTile;
  float* center = red_sum + kScoreGroups * kPairsPerTile;
  int* frame_s = reinterpret_cast<int*>(center + Round4(dim));

  const LseItem item = items[blockIdx.x];
  // The 16 threads of a warp half share a pair group (pg = t / 16), so a
  // warp's kept-score stores are two runs of 16 S floats (256 bytes at
  // tile 64) rather than 16 runs of 2 S (the statistics kernel keeps
  // pg = t % 16: its occupancy sums shuffle across the pair groups). The
  // scores are the same bits either way: each is the same FMA sequence
  // whichever thread runs it.
  const int t = threadIdx.x, pg = t >> 4, sgg = t & 15;
  const int n = item.pair_end - item.pair_begin;
  const float* first = model.tiles + static_cast<int64_t>(item.first_tile) * tile_floats;
  CopyAsync(buffer0, first, tile_floats, t);
  if (t < kPairsPerTile) frame_s[t] = t < n ? RecordOf(pairs, item.pair_begin + t).frame : -1;
  for (int d = t; d < dim; d += kStatsThreads) center[d] = model.center[d];
  __syncthreads();
  StageFrames<false>(pairs.frames, dim, frame_s, center, y, t);

  float run_max[4], run_sum[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) run_max[q] = -FLT_MAX, run_sum[q] = 0.0f;
  for (int j = 0; j < item.num_tiles; ++j) {
    if (j + 1 < item.num_tiles) {
      CopyAsync((j & 1) ? buffer0 : buffer1, first + static_cast<int64_t>(j + 1) * tile_floats, tile_floats, t);
      WaitAsync<1>();  // tile j has landed (tile j + 1 may still be in flight)
    } else {
      WaitAsync<0>();
    }
    __syncthreads();  // tile j (and, at j = 0, the staged frames) visible to all
    float score[4][kS];
    ScoreTile<kTile>((j & 1) ? buffer1 : buffer0, y, dim, pg, sgg, score);
    if (scores.data != nullptr) StoreScores(scores, item.pair_begin, n, int64_t{j} * kTile, pg, sgg, score);
#pragma unroll
    for (int q = 0; q < 4; ++q) AddToLogSum(score[q], run_max[q], run_sum[q]);
    __syncthreads();  // all done with this buffer before iteration j + 1 refills it
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    red_max[sgg * kPairsPerTile + 4 * pg + q] = run_max[q];
    red_sum[sgg * kPairsPerTile + 4 * pg + q] = run_sum[q];
  }
  __syncthreads();
  if (t < n) {
    float m, l;
    CombineLogSums(red_max + t, red_sum + t, m, l);
    lse_max[item.pair_begin + t] = m;
    lse_log[item.pair_begin + t] = l;
  }
}

// Resident CTAs per SM the statistics kernels are compiled for (register
// cap 65536 / (256 x this)): float64 register accumulators fit two CTAs
// (three for none of the shapes); without them (kFlushTiles > 0) three fit
// up to 5 columns per thread (80 registers, no spills at sm_90; 6 columns
// spill).
constexpr int StatsMinBlocks(int tile, int columns, int flush_tiles) {
  if (flush_tiles > 0) return columns <= 5 ? 3 : 2;
  return (tile == 64 || columns <= 5) ? 2 : 1;
}

namespace stats_detail {

// An item's sums of posteriors and of posterior-weighted x~ (the GEMM's),
// per thread: 4 Gaussians (4 gg ..) x kColumns columns (cg + j kGroups) and,
// for the occupancy, S Gaussians (S sgg ..). Where they wait between tiles:
//   kFlushTiles == 0: each tile's float32 sums are added into float64
//     registers, written to the item's partial slot at the end;
//   kFlushTiles > 0: float32 sums run over kFlushTiles tiles (64 kFlushTiles
//     products each) and are then added into the item's float64 partial
//     slot in global memory, each thread its own elements (no races, fixed
//     order): 48 fewer registers, so a third CTA fits on an SM.
template <int kTile, int kColumns, int kFlushTiles>
struct ItemSums {
  static constexpr int kS = kTile / 16;
  static constexpr int kGroups = ColumnGroups(kTile);
  static constexpr bool kRegisterSums = kFlushTiles == 0;

  double occ[kRegisterSums ? kS : 1];
  double acc[kRegisterSums ? 4 : 1][kRegisterSums ? kColumns : 1];
  float occ32[kS];
  float sum[4][kColumns];
  int pending = 0;    // tiles in the float32 sums
  bool first = true;  // nothing flushed to the slot yet

  __device__ __forceinline__ void Start() {
#pragma unroll
    for (int i = 0; i < kS; ++i) occ32[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < kColumns; ++j) sum[i][j] = 0.0f;
    }
    if constexpr (kRegisterSums) {
#pragma unroll
      for (int i = 0; i < kS; ++i) occ[i] = 0.0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < kColumns; ++j) acc[i][j] = 0.0;
      }
    }
  }

  // Adds the float32 sums into the float64 ones (registers, or the slot
  // `out` of row_doubles per Gaussian) and restarts them.
  __device__ __forceinline__ void Flush(double* out, int dim, int row_doubles, int gg, int cg, int pg, int sgg) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < kColumns; ++j) {
        if constexpr (kRegisterSums) {
          acc[i][j] += static_cast<double>(sum[i][j]);
        } else {
          const int column = cg + j * kGroups;
          if (column < 2 * dim) {
            double* at = out + (4 * gg + i) * row_doubles + 1 + column;
            *at = (first ? 0.0 : *at) + static_cast<double>(sum[i][j]);
          }
        }
        sum[i][j] = 0.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < kS; ++i) {
      if constexpr (kRegisterSums) {
        occ[i] += static_cast<double>(occ32[i]);
      } else if (pg == 0) {
        double* at = out + (sgg * kS + i) * row_doubles;
        *at = (first ? 0.0 : *at) + static_cast<double>(occ32[i]);
      }
      occ32[i] = 0.0f;
    }
    first = false;
  }

  // After each pair tile's GEMM.
  __device__ __forceinline__ void EndTile(double* out, int dim, int row_doubles, int gg, int cg, int pg, int sgg) {
    if (++pending == (kRegisterSums ? 1 : kFlushTiles)) {
      Flush(out, dim, row_doubles, gg, cg, pg, sgg);
      pending = 0;
    }
  }

  // After the item's last tile: everything into the slot.
  __device__ __forceinline__ void Finish(double* out, int dim, int row_doubles, int gg, int cg, int pg, int sgg) {
    if (pending > 0) Flush(out, dim, row_doubles, gg, cg, pg, sgg);
    if constexpr (kRegisterSums) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < kColumns; ++j) {
          const int column = cg + j * kGroups;
          if (column < 2 * dim) out[(4 * gg + i) * row_doubles + 1 + column] = acc[i][j];
        }
      }
      if (pg == 0) {
#pragma unroll
        for (int i = 0; i < kS; ++i) out[(sgg * kS + i) * row_doubles] = occ[i];
      }
    }
  }
};

// The thread's posteriors gamma[q][i] (pair 4 pg + q, Gaussian S sgg + i)
// into gam [Gaussian][pair], and their sum over the tile's pairs into the
// occupancy (each thread's 4 pairs, then the 16 threads of the same
// Gaussians by warp shuffle).
template <int kS>
__device__ __forceinline__ void StoreGammas(const float (&gamma)[4][kS], float* gam, int pg, int sgg,
                                            float (&occ32)[kS]) {
#pragma unroll
  for (int i = 0; i < kS; ++i) {
    float o = (gamma[0][i] + gamma[1][i]) + (gamma[2][i] + gamma[3][i]);
    o += __shfl_xor_sync(0xffffffffu, o, 1);
    o += __shfl_xor_sync(0xffffffffu, o, 2);
    o += __shfl_xor_sync(0xffffffffu, o, 4);
    o += __shfl_xor_sync(0xffffffffu, o, 8);
    occ32[i] += o;
    *reinterpret_cast<float4*>(gam + (sgg * kS + i) * kPairPitch + 4 * pg) =
        make_float4(gamma[0][i], gamma[1][i], gamma[2][i], gamma[3][i]);
  }
}

// The tile GEMM over the first n pairs, four at a time: sum[i][j] +=
// gamma (Gaussian 4 gg + i) . x~ (row cg + j kGroups).
template <int kTile, int kColumns>
__device__ __forceinline__ void TileGemm(const float* gam, const float* xt, int gg, int cg, int n,
                                         float (&sum)[4][kColumns]) {
  constexpr int kGroups = ColumnGroups(kTile);
  const float* grow = gam + 4 * gg * kPairPitch;
  const float* xrow = xt + cg * kPairPitch;
  const int quads = (n + 3) >> 2;
  for (int k = 0; k < quads; ++k) {
    float4 g4[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) g4[i] = *reinterpret_cast<const float4*>(grow + i * kPairPitch + 4 * k);
#pragma unroll
    for (int j = 0; j < kColumns; ++j) {
      const float4 x4 = *reinterpret_cast<const float4*>(xrow + j * kGroups * kPairPitch + 4 * k);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float s = sum[i][j];
        s = fmaf(g4[i].x, x4.x, s);
        s = fmaf(g4[i].y, x4.y, s);
        s = fmaf(g4[i].z, x4.z, s);
        s = fmaf(g4[i].w, x4.w, s);
        sum[i][j] = s;
      }
    }
  }
}

// Kept scores of one pair tile, [q][sgg][pg][S] in shared memory (q = pair
// % 4), so that a warp's reads of its pairs are conflict-free; pairs at or
// beyond n are not copied.
__device__ __forceinline__ int KeptScoreOffset(int pair, int sgg, int kS) {
  return (((pair & 3) * 16 + sgg) * 16 + (pair >> 2)) * kS;
}

// Starts the asynchronous copies of pair tile [pb, pb + n) of a kept-score
// item: its scores (columns [column, column + kTile) of their rows), its
// log-sum-exps and its pair records (none for a global GMM's pairs).
template <int kTile>
__device__ __forceinline__ void PrefetchKeptTile(const ScoresView& scores, const PairsView& pairs,
                                                 const float* lse_max, const float* lse_log, int pb, int n,
                                                 int64_t column, float* raw, PairRecord* records_s, float* max_s,
                                                 float* log_s, int thread) {
  constexpr int kS = kTile / 16;
  for (int c = thread; c < kPairsPerTile * 16; c += kStatsThreads) {
    const int p = c >> 4, g = c & 15;
    if (p < n) {
      CopyAsyncBytes<4 * kS>(raw + KeptScoreOffset(p, g, kS),
                             scores.data + (pb + p) * scores.row_floats + column + g * kS);
    }
  }
  if (thread < n) {
    CopyAsyncBytes<4>(max_s + thread, lse_max + pb + thread);
    CopyAsyncBytes<4>(log_s + thread, lse_log + pb + thread);
    if (pairs.records != nullptr) CopyAsyncBytes<8>(records_s + thread, pairs.records + pb + thread);
  }
  CommitAsync();
}

__host__ __device__ constexpr int64_t KeptStatsSharedFloats(int tile, int columns) {
  return int64_t{kPairsPerTile} * tile + int64_t{ColumnGroups(tile)} * columns * kPairPitch +
         int64_t{tile} * kPairPitch + 4 * kPairsPerTile;
}

}  // namespace stats_detail

// One CTA per StatsItem (see the file comment), for items of single-tile
// states, and of every state when the scores are not kept (CTAs of other
// items return at once). kColumns = columns of x~ per thread
// (ColumnsPerThread(dim, kTile)); kFlushTiles: ItemSums.
template <int kTile, int kColumns, int kFlushTiles>
__global__ void __launch_bounds__(kStatsThreads, StatsMinBlocks(kTile, kColumns, kFlushTiles))
    StatsKernel(const StatsModelView model, const PairsView pairs, const StatsItem* __restrict__ items,
                float* __restrict__ lse_max, float* __restrict__ lse_log, double* __restrict__ partials,
                const ScoresView scores) {
  using namespace stats_detail;
  constexpr int kS = kTile / 16;
  constexpr int kGroups = ColumnGroups(kTile);
  constexpr int kRows = kGroups * kColumns;
  static_assert(kScoreGroups * kPairsPerTile * 2 <= kTile * kPairPitch, "log-sum scratch fits gamma's array");
  const StatsItem item = items[blockIdx.x];
  const bool fused = model.single_tile[item.tile] != 0;
  if (scores.data != nullptr && !fused) return;  // KeptStatsKernel's
  float* shared = DynamicShared();
  const int dim = model.dim;
  const int tile_floats = kTile * (1 + 2 * dim);
  float* tile = shared;
  float* xt = tile + tile_floats;            // [kRows][pitch]: y (scoring), then x, x^2; zero rows
  float* gam = xt + kRows * kPairPitch;      // [kTile][pitch]
  float* center = gam + kTile * kPairPitch;
  int* frame_s = reinterpret_cast<int*>(center + Round4(dim));
  float* weight_s = reinterpret_cast<float*>(frame_s + kPairsPerTile);
  float* max_s = weight_s + kPairsPerTile;
  float* log_s = max_s + kPairsPerTile;

  const int t = threadIdx.x, pg = t & 15, sgg = t >> 4;
  const int cg = t % kGroups, gg = t / kGroups;
  const int row_doubles = 1 + 2 * dim;
  double* out = partials + static_cast<int64_t>(item.slot) * kTile * row_doubles;
  CopyAsync(tile, model.tiles + static_cast<int64_t>(item.tile) * tile_floats, tile_floats, t);
  for (int d = t; d < dim; d += kStatsThreads) center[d] = model.center[d];
  for (int i = 2 * dim * kPairPitch + t; i < kRows * kPairPitch; i += kStatsThreads) xt[i] = 0.0f;
  WaitAsync<0>();  // visible after the loop's first barrier

  ItemSums<kTile, kColumns, kFlushTiles> sums;
  sums.Start();
  for (int pb = item.pair_begin; pb < item.pair_end; pb += kPairsPerTile) {
    const int n = min(kPairsPerTile, item.pair_end - pb);
    __syncthreads();  // the previous tile's GEMM is done with xt, gam and the pair arrays
    LoadPairArrays(pairs, pb, n, fused, lse_max, lse_log, frame_s, weight_s, max_s, log_s, t);
    __syncthreads();
    StageFrames<false>(pairs.frames, dim, frame_s, center, xt, t);
    __syncthreads();

    float score[4][kS];
    ScoreTile<kTile>(tile, xt, dim, pg, sgg, score);

    if (fused) {  // the whole state is in this tile: its log-sum-exp here
      float* red_max = gam;  // gam is free until the posteriors are stored
      float* red_sum = gam + kScoreGroups * kPairsPerTile;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float m = -FLT_MAX, s = 0.0f;
        AddToLogSum(score[q], m, s);
        red_max[sgg * kPairsPerTile + 4 * pg + q] = m;
        red_sum[sgg * kPairsPerTile + 4 * pg + q] = s;
      }
      __syncthreads();
      if (t < kPairsPerTile) {
        float m, l;
        CombineLogSums(red_max + t, red_sum + t, m, l);
        max_s[t] = m;
        log_s[t] = l;
        if (t < n) {
          lse_max[pb + t] = m;
          lse_log[pb + t] = l;
        }
      }
      __syncthreads();
    }

    // Posteriors: gamma = w e^(score - max - log); 0 by select for pairs
    // beyond the tile (their lse is a placeholder).
    float gamma[4][kS];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int p = 4 * pg + q;
      const float m = max_s[p], l = log_s[p], w = weight_s[p];
#pragma unroll
      for (int i = 0; i < kS; ++i) {
        const float e = FastExp((score[q][i] - m) - l);
        gamma[q][i] = p < n ? w * e : 0.0f;
      }
    }
    StoreGammas(gamma, gam, pg, sgg, sums.occ32);
    __syncthreads();  // scoring is done with xt, the posteriors are in gam
    StageFrames<true>(pairs.frames, dim, frame_s, center, xt, t);
    __syncthreads();
    TileGemm<kTile, kColumns>(gam, xt, gg, cg, n, sums.sum);
    sums.EndTile(out, dim, row_doubles, gg, cg, pg, sgg);
  }
  sums.Finish(out, dim, row_doubles, gg, cg, pg, sgg);
}

// One CTA per StatsItem of a multi-tile state whose scores the LSE kernel
// kept (CTAs of single-tile items return at once: StatsKernel's). The same
// posteriors and sums as StatsKernel without scoring, and with a pipeline:
// while a pair tile's GEMM runs, the next tile's scores, log-sum-exps and
// pair records are already on their way into shared memory (cp.async), so
// the GEMM waits only for the frames' x~ (read from L2).
template <int kTile, int kColumns, int kFlushTiles>
__global__ void __launch_bounds__(kStatsThreads, StatsMinBlocks(kTile, kColumns, kFlushTiles))
    KeptStatsKernel(const StatsModelView model, const PairsView pairs, const StatsItem* __restrict__ items,
                    const float* __restrict__ lse_max, const float* __restrict__ lse_log,
                    double* __restrict__ partials, const ScoresView scores) {
  using namespace stats_detail;
  constexpr int kS = kTile / 16;
  constexpr int kGroups = ColumnGroups(kTile);
  constexpr int kRows = kGroups * kColumns;
  const StatsItem item = items[blockIdx.x];
  if (model.single_tile[item.tile] != 0) return;
  float* shared = DynamicShared();
  const int dim = model.dim;
  float* raw = shared;                                   // KeptScoreOffset layout, kPairsPerTile x kTile
  float* xt = raw + kPairsPerTile * kTile;               // [kRows][pitch]: x, x^2; zero rows
  float* gam = xt + kRows * kPairPitch;                  // [kTile][pitch]
  auto* records_s = reinterpret_cast<PairRecord*>(gam + kTile * kPairPitch);
  float* max_s = reinterpret_cast<float*>(records_s + kPairsPerTile);
  float* log_s = max_s + kPairsPerTile;

  const int t = threadIdx.x, pg = t & 15, sgg = t >> 4;
  const int cg = t % kGroups, gg = t / kGroups;
  const int row_doubles = 1 + 2 * dim;
  const int64_t column = int64_t{model.tile_in_state[item.tile]} * kTile;
  double* out = partials + static_cast<int64_t>(item.slot) * kTile * row_doubles;
  for (int i = 2 * dim * kPairPitch + t; i < kRows * kPairPitch; i += kStatsThreads) xt[i] = 0.0f;
  PrefetchKeptTile<kTile>(scores, pairs, lse_max, lse_log, item.pair_begin,
                          min(kPairsPerTile, item.pair_end - item.pair_begin), column, raw, records_s, max_s, log_s, t);

  ItemSums<kTile, kColumns, kFlushTiles> sums;
  sums.Start();
  for (int pb = item.pair_begin; pb < item.pair_end; pb += kPairsPerTile) {
    const int n = min(kPairsPerTile, item.pair_end - pb);
    WaitAsync<0>();
    __syncthreads();  // this tile's copies visible to all; the previous GEMM is done with xt and gam
    const int stage_pair = t >> 2;
    const int frame = stage_pair >= n                ? -1
                      : pairs.records == nullptr ? static_cast<int>(pairs.first_frame + pb + stage_pair)
                                                 : records_s[stage_pair].frame;
    StageFrameRows<true>(pairs.frames, dim, frame, nullptr, xt, t);

    float gamma[4][kS];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int p = 4 * pg + q;
      float score[kS];
      LoadVector(raw + KeptScoreOffset(p, sgg, kS), score);
      const float m = max_s[p], l = log_s[p];
      const float w = pairs.records == nullptr ? 1.0f : records_s[p].weight;
#pragma unroll
      for (int i = 0; i < kS; ++i) {
        const float e = FastExp((score[i] - m) - l);
        gamma[q][i] = p < n ? w * e : 0.0f;  // select: what lies beyond n was never copied
      }
    }
    StoreGammas(gamma, gam, pg, sgg, sums.occ32);
    __syncthreads();  // x~ and the posteriors are staged; the copy buffers are free
    if (pb + kPairsPerTile < item.pair_end) {
      PrefetchKeptTile<kTile>(scores, pairs, lse_max, lse_log, pb + kPairsPerTile,
                              min(kPairsPerTile, item.pair_end - pb - kPairsPerTile), column, raw, records_s, max_s,
                              log_s, t);
    }
    TileGemm<kTile, kColumns>(gam, xt, gg, cg, n, sums.sum);
    sums.EndTile(out, dim, row_doubles, gg, cg, pg, sgg);
  }
  sums.Finish(out, dim, row_doubles, gg, cg, pg, sgg);
}

// (The two kernels below are not templates: static, as this header is
// included by both launcher files, stats_kernels.cu and stats_tc_kernels.cu.)

// One CTA per (output, 256 elements of its rows): the element's sum over
// the output's partial slots, kReduceLanes slots per step in independent
// accumulators (loads in flight), added up in a fixed order at the end.
static __global__ void __launch_bounds__(kStatsThreads)
    ReducePartialsKernel(const double* __restrict__ partials, const ItemRange* __restrict__ ranges, int tile,
                         int row_doubles, double* __restrict__ out) {
  const ItemRange range = ranges[blockIdx.x];
  const int e = blockIdx.y * kStatsThreads + threadIdx.x;
  if (e >= range.rows * row_doubles) return;
  const int64_t slot_doubles = static_cast<int64_t>(tile) * row_doubles;
  const double* p = partials + range.item_begin * slot_doubles + e;
  double lane[kReduceLanes] = {};
  int k = range.item_begin;
  for (; k + kReduceLanes <= range.item_end; k += kReduceLanes, p += kReduceLanes * slot_doubles) {
#pragma unroll
    for (int l = 0; l < kReduceLanes; ++l) lane[l] += p[l * slot_doubles];
  }
#pragma unroll
  for (int l = 0; l + 1 < kReduceLanes; ++l) {
    if (k + l < range.item_end) lane[l] += p[l * slot_doubles];
  }
  double sum = 0.0;
#pragma unroll
  for (int l = 0; l < kReduceLanes; ++l) sum += lane[l];
  out[static_cast<int64_t>(range.out_row) * row_doubles + e] = sum;
}

// block_sums[b] = sum over this block's fixed share of pairs of
// w (max + log), in float64 (a tree of fixed shape: the same bits every run).
static __global__ void __launch_bounds__(kStatsThreads)
    WeightedLseSumKernel(const float* __restrict__ lse_max, const float* __restrict__ lse_log,
                         const PairRecord* __restrict__ records, int64_t num_pairs, double* __restrict__ block_sums) {
  __shared__ double partial[kStatsThreads];
  double acc = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kStatsThreads + threadIdx.x; i < num_pairs;
       i += static_cast<int64_t>(gridDim.x) * kStatsThreads) {
    const float w = records != nullptr ? records[i].weight : 1.0f;
    if (w != 0.0f) acc += static_cast<double>(w) * (static_cast<double>(lse_max[i]) + lse_log[i]);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kStatsThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
}

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_KERNELS_CUH_
