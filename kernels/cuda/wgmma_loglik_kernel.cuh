// The Hopper tensor-core likelihood kernel: 3xTF32 on wgmma (sm_90a) over
// the GEMM form [K, u, v] . [1, y, y^2], with the log-sum-exp over each
// state's Gaussians fused into the epilogue.
//
// Why a second tensor-core kernel: the mma.sync kernel (tc_loglik_kernel.cuh)
// loads every B fragment from shared memory with ordinary instructions (4
// loads per 3 MMAs of 16 x 8 x 8); Nsight Compute showed it latency-bound at
// 42% issue. Here a warpgroup issues m64n64k8 MMAs that read the model
// straight from shared memory through a descriptor. Each block works in
// order (copy chunk c + 1 in while chunk c's MMAs run, wait, fold), and two
// blocks share an SM, so one block's folds overlap the other's MMAs. A
// version that overlapped inside the block (two accumulator sets, folding
// chunk c - 1 under chunk c's MMAs, 4 stages, one block per SM) measured
// 1.5x slower on an H100 (docs/PERFORMANCE.md, "wgmma").
//
// Roles: frames are the MMA's M (64 per warpgroup, two warpgroups = 128
// frames per block, sharing each model chunk), Gaussians its N (a chunk of
// 64 rows = 8 row groups of TensorCoreLayout, each of one state), the
// expanded features its K. A stays in registers (the warp's 16 frames, as
// TF32 big and small parts, the same fragments as mma.sync m16n8k8); B is
// copied from the row-major layout into the K-major layout with the 32-byte
// swizzle (one k-step of 8 TF32 per 32-byte row; 10% faster than the
// unswizzled core-matrix layout, measured).
// Block y scores a span of whole TensorCoreLayout ranges, so every state's
// log-sum finishes inside one block.
#ifndef GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/internal/log_math.cuh"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/tc_loglik_kernel.cuh"

namespace gmmscore {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GMMSCORE_WGMMA_ENABLED 1
#endif

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
// start address, leading (K-direction) and stride (N-direction) byte offsets,
// all in 16-byte units; swizzle mode 0 (none).
__device__ __forceinline__ uint64_t MatrixDescriptor(uint32_t shared_address, uint32_t leading_bytes,
                                                     uint32_t stride_bytes) {
  return static_cast<uint64_t>((shared_address >> 4) & 0x3FFF) |
         (static_cast<uint64_t>((leading_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride_bytes >> 4) & 0x3FFF) << 32);
}

__device__ __forceinline__ void WgmmaFence() {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void WgmmaCommit() {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// d (64 x 64 per warpgroup, 32 floats a thread) = a * b + (kAccumulate ? d : 0),
// a from registers (TF32), b from shared memory through `b_desc`.
template <bool kAccumulate>
__device__ __forceinline__ void WgmmaTf32(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, %37, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "n"(kAccumulate ? 1 : 0));
#endif
}

__device__ __forceinline__ void CopyAsync16(uint32_t shared_address, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address), "l"(global) : "memory");
}
__device__ __forceinline__ void CopyAsync4(uint32_t shared_address, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address), "l"(global) : "memory");
}
__device__ __forceinline__ void CopyAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void CopyAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
// Orders this thread's completed shared-memory writes (cp.async included)
// before later reads by the async proxy (wgmma).
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The row groups [begin, end) block y scores, a span of whole ranges (so
// every state's log-sum finishes inside the block), in `chunks` chunks of
// kChunkGroups row groups.
struct WgmmaSpan {
  int begin;
  int end;
  int chunks;
};
template <int kChunkGroups>
__device__ __forceinline__ WgmmaSpan BlockSpan(const int32_t* __restrict__ range_begin, int num_ranges) {
  const int first = static_cast<int>(static_cast<int64_t>(blockIdx.y) * num_ranges / gridDim.y);
  const int last = static_cast<int>((static_cast<int64_t>(blockIdx.y) + 1) * num_ranges / gridDim.y);
  WgmmaSpan span{range_begin[first], range_begin[last], 0};
  span.chunks = (span.end - span.begin + kChunkGroups - 1) / kChunkGroups;
  return span;
}

// A stage's matrix holds, per k-step (32 bytes a row: 8 TF32 or 16
// binary16 values), a kChunkRows x 32-byte block in the 32-byte swizzle
// (address bit 4 ^= bit 7), which the descriptor names (mode 3; 8-row
// groups 256 bytes apart; the leading offset is unused when a k-step fills
// the swizzle). Byte of 16-byte unit (row, k-step k, half h):
template <int kChunkRows>
__device__ __forceinline__ uint32_t SwizzledUnitOffset(int row, int k, int h) {
  return static_cast<uint32_t>(k * kChunkRows * 32 + row * 32 + ((h ^ ((row >> 2) & 1)) << 4));
}
template <int kChunkRows>
__device__ __forceinline__ uint64_t SwizzledStepDescriptor(uint32_t matrix, int k) {
  return MatrixDescriptor(matrix + static_cast<uint32_t>(k * kChunkRows * 32), 16u, 256u) | (3ull << 62);
}

// Starts copying rows [first_row, first_row + kChunkRows) of `big` and
// `small` (row-major, `row_bytes` a row, a multiple of 32) into a stage's two
// matrices, big at `stage` and small `matrix_bytes` after it. Thread order:
// 16-byte unit u is half u % 2 of k-step u / (2 kChunkRows) of row
// u / 2 % kChunkRows, so a warp reads whole 32-byte sectors.
template <int kChunkRows, int kThreads>
__device__ __forceinline__ void CopyChunkAsync(const void* big, const void* small, int64_t first_row,
                                               int row_bytes, uint32_t stage, uint32_t matrix_bytes) {
  const char* big_bytes = static_cast<const char*>(big);
  const char* small_bytes = static_cast<const char*>(small);
  const int units = kChunkRows * row_bytes / 16;
  for (int u = threadIdx.x; u < units; u += kThreads) {
    const int h = u & 1;
    const int row = (u >> 1) % kChunkRows;
    const int k = (u >> 1) / kChunkRows;
    const int64_t at = (first_row + row) * row_bytes + k * 32 + h * 16;
    const uint32_t offset = SwizzledUnitOffset<kChunkRows>(row, k, h);
    CopyAsync16(stage + offset, big_bytes + at);
    CopyAsync16(stage + matrix_bytes + offset, small_bytes + at);
  }
}

template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks) WgmmaLoglikKernel(const TensorCoreArgs args) {
  // kMinBlocks blocks of the widest instance must fit one SM's shared memory.
  static_assert(Policy::kMinBlocks * Policy::SharedBytes(8 * Policy::kSteps) <= kSharedBytesPerSmSm90,
                "wgmma stages exceed an sm_90 SM's shared memory at kMinBlocks blocks");
  using P = Policy;
  extern __shared__ __align__(128) float shared_wg[];
  const int cols = args.cols;
  const uint32_t shared_base = static_cast<uint32_t>(__cvta_generic_to_shared(shared_wg));
  const uint32_t stage_bytes = static_cast<uint32_t>(P::StageBytes(cols));
  const uint32_t matrix_bytes = stage_bytes / 2;  // big, then small

  const int warp = threadIdx.x / 32;  // warpgroup = warp / 4
  const int lane = threadIdx.x % 32;
  const int group = lane >> 2;
  const int thread = lane & 3;
  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * P::kFrames + warp * 16;

  const WgmmaSpan span = BlockSpan<P::kChunkGroups>(args.range_begin, args.num_ranges);
  const int span_begin = span.begin;
  const int span_end = span.end;
  const int chunks = span.chunks;

  // Chunk c (64 rows from row group span_begin + 8c) into stage c % kStages.
  auto load_chunk = [&](int c) {
    if (c < chunks) {
      CopyChunkAsync<P::kChunkRows, P::kThreads>(
          args.big, args.small, static_cast<int64_t>(span_begin + c * P::kChunkGroups) * 8,
          cols * static_cast<int>(sizeof(float)), shared_base + static_cast<uint32_t>(c % P::kStages) * stage_bytes,
          matrix_bytes);
    }
    CopyAsyncCommit();  // empty groups keep the wait counts uniform
  };

  load_chunk(0);

  // A fragments of this warp's 16 frames (SplitFrameFragments).
  uint32_t a_big[P::kSteps][4], a_small[P::kSteps][4];
  SplitFrameFragments<P::kSteps>(args.features, args.center, args.dim, args.num_frames, first_frame, group, thread,
                                 a_big, a_small);

  // Running log-sum of the current state for frames group (0) and group + 8
  // (1), over this lane's Gaussian columns; the 4 lanes of a frame combine
  // theirs when the state changes.
  int state = -1;
  float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};
  auto flush = [&]() {
    FlushQuadLogSums(run_max, run_sum, state, first_frame, group, thread, args.num_frames, args.num_states,
                     args.loglikes);
  };

  // Folds chunk c's scores (accumulator d) into the running log-sums.
  // d[4j..4j+3]: row group j, frames (group, group, group + 8, group + 8),
  // Gaussians (2 thread, 2 thread + 1) of it.
  auto fold = [&](const float (&d)[32], int c) {
    const int first_group = span_begin + c * P::kChunkGroups;
#pragma unroll
    for (int j = 0; j < P::kChunkGroups; ++j) {
      if (first_group + j >= span_end) break;  // uniform: the next span's rows
      const int tile_state = __ldg(args.row_group_state + first_group + j);
      if (tile_state != state) {
        flush();
        state = tile_state;
      }
      LogAdd(d[4 * j + 0], run_max[0], run_sum[0]);
      LogAdd(d[4 * j + 1], run_max[0], run_sum[0]);
      LogAdd(d[4 * j + 2], run_max[1], run_sum[1]);
      LogAdd(d[4 * j + 3], run_max[1], run_sum[1]);
    }
  };

  // All small products first, then the big ones, so the small terms are
  // summed before they meet the large partial sums.
  auto issue = [&](float (&d)[32], int c) {
    const uint32_t stage = shared_base + static_cast<uint32_t>(c % P::kStages) * stage_bytes;
    WgmmaFence();
#pragma unroll
    for (int s = 0; s < P::kSteps; ++s) {
      if (s * 8 < cols) {
        const uint64_t big_desc = SwizzledStepDescriptor<P::kChunkRows>(stage, s);
        if (s == 0) {
          WgmmaTf32<false>(d, a_small[s], big_desc);
        } else {
          WgmmaTf32<true>(d, a_small[s], big_desc);
        }
        WgmmaTf32<true>(d, a_big[s], SwizzledStepDescriptor<P::kChunkRows>(stage + matrix_bytes, s));
      }
    }
#pragma unroll
    for (int s = 0; s < P::kSteps; ++s) {
      if (s * 8 < cols) WgmmaTf32<true>(d, a_big[s], SwizzledStepDescriptor<P::kChunkRows>(stage, s));
    }
    WgmmaCommit();
  };

  // Chunk c: its stage is ready once this thread's copies landed and every
  // thread passed the barrier; the barrier also means both warpgroups
  // finished chunk c - 1's MMAs (waited in iteration c - 1), so chunk c + 1
  // may overwrite that stage while chunk c's MMAs run.
  float acc[32];
  for (int c = 0; c < chunks; ++c) {
    CopyAsyncWait<0>();
    FenceProxyAsyncShared();
    __syncthreads();
    load_chunk(c + 1);
    issue(acc, c);
    WgmmaWait<0>();
    fold(acc, c);
  }
  flush();
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_WGMMA_LOGLIK_KERNEL_CUH_
