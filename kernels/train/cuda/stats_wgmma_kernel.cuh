// The Hopper statistics kernel: the tensor-core statistics pass of
// stats_tc_kernels.cuh (same items, partials and lse arrays) on wgmma
// (sm_90a), where mma.sync could not beat the float32 kernels (its B
// fragments come through ordinary loads; docs/PERFORMANCE.md, "Training").
// Launched by stats_wgmma_launch.cu; chosen by CudaStatsOptions::kernel.
//
// One CTA per StatsItem (pairs of one target against one 64-Gaussian
// tile), one warpgroup (kWarpGroups: the code is written for several, each
// taking its own 64 pairs of a round and sharing the parameter tile):
//   scoring, S[pair][g] = [1, y, y^2] . [K; u; v]: m64n64k8 wgmmas, A = the
//     warpgroup's 64 pairs from registers (split on the fly), B = the tile
//     through descriptors (pre-split big and small matrices, K-major in the
//     32-byte swizzle, the layout of wgmma_loglik_kernel.cuh). The products
//     are issued in that kernel's order (small terms first), so the scores
//     are its bits: its log-sum-exp (LaunchWgmmaLoglik) is the one the
//     posteriors divide by;
//   posteriors gamma = w e^(S - lse): a single-tile state's log-sum-exp
//     comes from the row itself (each warp holds whole pair rows: quad
//     shuffles), then gamma goes to shared memory as [g][pair];
//   statistics, acc[g][k] += sum_p gamma[g][p] x~[p][k], x~ = [1, x, x^2]
//     raw: m64nNk8 wgmmas (N = 8 kSteps columns), A = gamma from shared
//     memory into registers (split), B = x~ staged per round as big and small
//     matrices in the swizzled K-major layout (K = the 64 pairs).
// Each warpgroup keeps float32 sums of its own pairs; every
// kStatsFlushTilesAlt rounds they are added into the item's float64 partial
// slot, warpgroup by warpgroup (a fixed order: the same bits every run).
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_KERNEL_CUH_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "kernels/cuda/wgmma_loglik_kernel.cuh"
#include "kernels/train/cuda/stats_tc_kernels.cuh"

namespace gmmscore {
namespace train_cuda {
namespace stats_wgmma_detail {

// One warpgroup per CTA and two CTAs per SM (108 KB of shared memory each
// at D = 43): one CTA's staging and exponentials run under the other's
// wgmmas. (Two warpgroups in one CTA, in lockstep, left the tensor cores
// idle through both phases: 2.2x slower, measured on an H200.)
inline constexpr int kWarpGroups = 1;
inline constexpr int kThreads = 128 * kWarpGroups;
inline constexpr int kGroupPairs = 64;  // pairs per warpgroup per round

// d (64 x N per warpgroup, N / 2 floats a thread) += a * b, a from
// registers (TF32), b from shared memory through `b_desc`.
template <int N>
__device__ __forceinline__ void WgmmaTf32N(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b_desc);
template <>
__device__ __forceinline__ void WgmmaTf32N<32>(float (&d)[16], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
#endif
}
template <>
__device__ __forceinline__ void WgmmaTf32N<64>(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
#endif
}
template <>
__device__ __forceinline__ void WgmmaTf32N<80>(float (&d)[40], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n80k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, "
      "{%40, %41, %42, %43}, %44, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
#endif
}
template <>
__device__ __forceinline__ void WgmmaTf32N<88>(float (&d)[44], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n88k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43}, "
      "{%44, %45, %46, %47}, %48, 1, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
#endif
}

// Byte of 16-byte unit (row r, k-step k, half h) in a K-major matrix of
// `rows` rows in the 32-byte swizzle (wgmma_loglik_kernel.cuh's layout).
__host__ __device__ constexpr uint32_t SwizzledUnit(int rows, int r, int k, int h) {
  return static_cast<uint32_t>(k * rows * 32 + r * 32 + ((h ^ ((r >> 2) & 1)) << 4));
}
__device__ __forceinline__ uint64_t SwizzledDescriptor(uint32_t matrix, int rows, int k) {
  return MatrixDescriptor(matrix + static_cast<uint32_t>(k * rows * 32), 16u, 256u) | (3ull << 62);
}

// Shared-memory bytes: the tile's big and small matrices, then per
// warpgroup x~ big and small, gamma ([64][kPairPitch] floats) and the pair
// arrays (frame, weight, max, log), then the centre.
template <int kSteps>
struct WgmmaStatsLayout {
  static constexpr int kN = 8 * kSteps;
  static constexpr uint32_t kTileMatrix = 64u * kN * 4;          // one of big, small
  static constexpr uint32_t kXtMatrix = kN * kGroupPairs * 4u;  // one of big, small
  static constexpr uint32_t kGamma = 64u * kPairPitch * 4;
  static constexpr uint32_t kPairArrays = 4u * kGroupPairs * 4;
  static constexpr uint32_t kGroupBytes = 2 * kXtMatrix + kGamma + kPairArrays;
  static constexpr uint32_t kCenter = 2 * kTileMatrix + kWarpGroups * kGroupBytes;
  static constexpr size_t Bytes(int dim) { return kCenter + 4u * stats_detail::Round4(dim); }
};

// A fragments (rows group, group + 8 of the warp's 16 pairs) of [1, y, y^2]
// (y = x - center) for every k-step, split; rows without a frame are 0.
// The values and the split are SplitFrameFragments's, so the scores are the
// likelihood kernel's bits.
template <int kSteps>
__device__ __forceinline__ void SplitPairFragments(const float* __restrict__ frames, const float* center, int dim,
                                                   int frame0, int frame1, int thread, uint32_t (&big)[kSteps][4],
                                                   uint32_t (&small)[kSteps][4]) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int frame = (r & 1) ? frame1 : frame0;
      const int k = s * 8 + thread + (r >> 1) * 4;
      float value = 0.0f;
      if (frame >= 0 && k <= 2 * dim) {
        if (k == 0) {
          value = 1.0f;
        } else {
          const int d = (k - 1) % dim;
          const float y = frames[static_cast<int64_t>(frame) * dim + d] - center[d];
          value = k <= dim ? y : y * y;
        }
      }
      big[s][r] = ToTf32(value);
      small[s][r] = ToTf32(value - __uint_as_float(big[s][r]));
    }
  }
}

}  // namespace stats_wgmma_detail

// See the file comment. kSteps = TcCols(dim) / 8 exactly (the statistics
// product's N is 8 kSteps).
template <int kSteps>
__global__ void __launch_bounds__(stats_wgmma_detail::kThreads, 2)
    WgmmaStatsKernel(const StatsModelView model, const PairsView pairs, const StatsItem* __restrict__ items,
                     const float* __restrict__ tile_big, const float* __restrict__ tile_small,
                     float* __restrict__ lse_max, float* __restrict__ lse_log, double* __restrict__ partials) {
  using namespace stats_wgmma_detail;
  using Layout = WgmmaStatsLayout<kSteps>;
  constexpr int kN = Layout::kN;
  extern __shared__ __align__(128) float shared_ws[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(shared_ws));
  unsigned char* bytes = reinterpret_cast<unsigned char*>(shared_ws);
  const int dim = model.dim;
  const int cols = kN;  // TcCols(dim)
  const int t = threadIdx.x, wg = t / 128, wt = t % 128, warp = wt / 32, lane = t % 32;
  const int group = lane >> 2, thread = lane & 3;
  const uint32_t tile_big_s = base, tile_small_s = base + Layout::kTileMatrix;
  const uint32_t group_base = 2 * Layout::kTileMatrix + wg * Layout::kGroupBytes;
  const uint32_t xt_big_s = base + group_base, xt_small_s = xt_big_s + Layout::kXtMatrix;
  unsigned char* xt_big = bytes + group_base;
  unsigned char* xt_small = xt_big + Layout::kXtMatrix;
  float* gam = reinterpret_cast<float*>(xt_big + 2 * Layout::kXtMatrix);
  int* frame_s = reinterpret_cast<int*>(gam + 64 * kPairPitch);
  float* weight_s = reinterpret_cast<float*>(frame_s + kGroupPairs);
  float* max_s = weight_s + kGroupPairs;
  float* log_s = max_s + kGroupPairs;
  float* center = reinterpret_cast<float*>(bytes + Layout::kCenter);

  const StatsItem item = items[blockIdx.x];
  const bool fused = model.single_tile[item.tile] != 0;
  const int row_doubles = 1 + 2 * dim;
  double* out = partials + static_cast<int64_t>(item.slot) * kTcTile * row_doubles;

  // The parameter tile, [64 Gaussians][cols] in global memory, into the
  // swizzled K-major matrices (16-byte unit u: half u % 2 of k-step u / 128
  // of row u / 2 % 64).
  {
    const int64_t first = static_cast<int64_t>(item.tile) * kTcTile * cols;
    for (int u = t; u < kTcTile * cols / 4; u += kThreads) {
      const int h = u & 1, row = (u >> 1) % kTcTile, k = (u >> 1) / kTcTile;
      const int64_t at = first + static_cast<int64_t>(row) * cols + k * 8 + h * 4;
      const uint32_t offset = SwizzledUnit(kTcTile, row, k, h);
      CopyAsync16(tile_big_s + offset, tile_big + at);
      CopyAsync16(tile_small_s + offset, tile_small + at);
    }
    CopyAsyncCommit();
  }
  for (int d = t; d < dim; d += kThreads) center[d] = model.center[d];
  CopyAsyncWait<0>();
  FenceProxyAsyncShared();

  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.0f;
  // Adds warpgroup `from`'s float32 sums into the partial slot (`first`:
  // nothing there yet), then restarts them; all threads call it.
  auto flush = [&](bool first) {
    for (int from = 0; from < kWarpGroups; ++from) {
      if (wg == from) {
#pragma unroll
        for (int i = 0; i < kN / 2; ++i) {
          const int j = i / 4, c = i % 4;
          const int row = 16 * warp + group + (c >> 1) * 8;
          const int column = 8 * j + 2 * thread + (c & 1);
          if (column < row_doubles) {
            double* at = out + row * row_doubles + column;
            *at = (first && from == 0 ? 0.0 : *at) + static_cast<double>(acc[i]);
          }
          acc[i] = 0.0f;
        }
      }
      __syncthreads();
    }
  };

  int pending = 0;
  bool first = true;
  for (int round = item.pair_begin; round < item.pair_end; round += kWarpGroups * kGroupPairs) {
    const int pb = round + wg * kGroupPairs;
    const int n = max(0, min(kGroupPairs, item.pair_end - pb));
    __syncthreads();  // the last round's products are done with x~, gamma and the pair arrays
    if (wt < kGroupPairs) {
      const bool valid = wt < n;
      const PairRecord record = valid ? stats_detail::RecordOf(pairs, pb + wt) : PairRecord{-1, 0.0f};
      frame_s[wt] = record.frame;
      weight_s[wt] = record.weight;
      if (!fused) {
        max_s[wt] = valid ? lse_max[pb + wt] : 0.0f;
        log_s[wt] = valid ? lse_log[pb + wt] : 0.0f;
      }
    }
    __syncthreads();

    // x~ of the warpgroup's pairs, split, into the swizzled K-major
    // matrices (rows = the kN columns, K = the 64 pairs). A warp writes 8
    // pairs (one 32-byte row) of 4 columns at a time: conflict-free. Every
    // load is issued before the first store (a store between loads would
    // keep each load from starting before the last one returned).
    constexpr int kWarpTasks = 8 * (kN / 4) / 4;  // per warp
    constexpr int kBatch = kWarpTasks % 11 == 0 ? 11 : 8;  // loads in flight (registers allow ~11)
    static_assert(kWarpTasks % kBatch == 0, "whole batches of staging tasks");
#pragma unroll 1
    for (int first_task = 0; first_task < kWarpTasks; first_task += kBatch) {
      float xs[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const int task = warp + 4 * (first_task + i);
        const int ks = task % 8, c = (task / 8) * 4 + (lane >> 3);
        const int frame = frame_s[ks * 8 + (lane & 7)];
        float x = 0.0f;
        if (frame >= 0 && c <= 2 * dim) {
          if (c == 0) {
            x = 1.0f;
          } else {
            const int d = c <= dim ? c - 1 : c - 1 - dim;
            const float raw = __ldg(pairs.frames + static_cast<int64_t>(frame) * dim + d);
            x = c <= dim ? raw : raw * raw;
          }
        }
        xs[i] = x;
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const int task = warp + 4 * (first_task + i);
        const int ks = task % 8, c = (task / 8) * 4 + (lane >> 3);
        const int p = ks * 8 + (lane & 7);
        const uint32_t offset = SwizzledUnit(kN, c, ks, (p & 7) >> 2) + 4 * (p & 3);
        const uint32_t x_big = ToTf32(xs[i]);
        *reinterpret_cast<uint32_t*>(xt_big + offset) = x_big;
        *reinterpret_cast<uint32_t*>(xt_small + offset) = ToTf32(xs[i] - __uint_as_float(x_big));
      }
    }
    FenceProxyAsyncShared();  // x~ written by this thread, read by wgmma below

    // Scores of the warp's 16 pairs against the tile's 64 Gaussians.
    float score[32];
    {
      uint32_t a_big[kSteps][4], a_small[kSteps][4];
      const int p0 = 16 * warp + group;
      SplitPairFragments<kSteps>(pairs.frames, center, dim, frame_s[p0], frame_s[p0 + 8], thread, a_big, a_small);
      WgmmaFence();
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const uint64_t big_desc = SwizzledDescriptor(tile_big_s, kTcTile, s);
        if (s == 0) {
          WgmmaTf32<false>(score, a_small[s], big_desc);
        } else {
          WgmmaTf32<true>(score, a_small[s], big_desc);
        }
        WgmmaTf32<true>(score, a_big[s], SwizzledDescriptor(tile_small_s, kTcTile, s));
      }
#pragma unroll
      for (int s = 0; s < kSteps; ++s) WgmmaTf32<true>(score, a_big[s], SwizzledDescriptor(tile_big_s, kTcTile, s));
      WgmmaCommit();
      WgmmaWait<0>();
    }

    // score[4j + c]: pair 16 warp + group (+8 for c >= 2), Gaussian
    // 8j + 2 thread + (c & 1). A single-tile state's log-sum-exp over the row.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = 16 * warp + group + 8 * h;
      float m, l;
      if (fused) {
        float row[16];
#pragma unroll
        for (int j = 0; j < 8; ++j) row[2 * j] = score[4 * j + 2 * h], row[2 * j + 1] = score[4 * j + 2 * h + 1];
        float run_max = -FLT_MAX, run_sum = 0.0f;
        stats_detail::AddToLogSum(row, run_max, run_sum);
#pragma unroll
        for (int offset = 1; offset <= 2; offset <<= 1) {
          const float other_max = __shfl_xor_sync(0xffffffffu, run_max, offset);
          const float other_sum = __shfl_xor_sync(0xffffffffu, run_sum, offset);
          const float larger = fmaxf(run_max, other_max);
          run_sum = run_sum * stats_detail::FastExp(run_max - larger) +
                    other_sum * stats_detail::FastExp(other_max - larger);
          run_max = larger;
        }
        m = run_max;
        l = run_sum > 0.0f ? __logf(run_sum) : 0.0f;
        if (thread == 0 && p < n) {
          lse_max[pb + p] = m;
          lse_log[pb + p] = l;
        }
      } else {
        m = max_s[p];
        l = log_s[p];
      }
      const float w = weight_s[p];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int g = 8 * j + 2 * thread + e;
          const float gamma = stats_detail::FastExp((score[4 * j + 2 * h + e] - m) - l);
          gam[g * kPairPitch + p] = p < n ? w * gamma : 0.0f;
        }
      }
    }
    __syncthreads();  // the warpgroup's gamma and x~ complete

    // acc[g][k] += sum over the 64 pairs of gamma[g][p] x~[p][k].
    {
      uint32_t a_big[8][4], a_small[8][4];
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        stats_tc_detail::LoadSplitA(gam, kPairPitch, 16 * warp, 8 * ks, group, thread, a_big[ks], a_small[ks]);
      }
      WgmmaFence();
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        WgmmaTf32N<kN>(acc, a_small[ks], SwizzledDescriptor(xt_big_s, kN, ks));
        WgmmaTf32N<kN>(acc, a_big[ks], SwizzledDescriptor(xt_small_s, kN, ks));
        WgmmaTf32N<kN>(acc, a_big[ks], SwizzledDescriptor(xt_big_s, kN, ks));
      }
      WgmmaCommit();
      WgmmaWait<0>();
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

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_WGMMA_KERNEL_CUH_
