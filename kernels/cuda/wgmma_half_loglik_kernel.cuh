// The Hopper tensor-core likelihood kernel in 3xFP16: the wgmma kernel's
// form (wgmma_loglik_kernel.cuh: frames are M, a chunk of 64 Gaussian rows
// N, in order per block, two blocks an SM) with binary16 operands instead of
// TF32. Both keep 10 explicit mantissa bits, so big x big + small x big +
// big x small is as exact either way; but an f16 wgmma covers k = 16 where
// TF32 covers 8 at the same issue cost, so a chunk takes half the MMAs, the
// frames' A fragments half the registers and the model chunk half the
// shared memory and L2 traffic. binary16's narrow range is made up by exact
// power-of-two scales (half_tc_layout.h): per column (chosen with the
// model), per frame (chosen here, for outliers), and K kept in float32 and
// added in the epilogue.
#ifndef GMMSCORE_KERNELS_CUDA_WGMMA_HALF_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_WGMMA_HALF_LOGLIK_KERNEL_CUH_

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/internal/half_tensor_core_args.h"
#include "kernels/cuda/internal/log_math.cuh"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/tc_loglik_kernel.cuh"
#include "kernels/cuda/wgmma_loglik_kernel.cuh"

namespace gmmscore {

// d (64 x 64 per warpgroup, 32 floats a thread) = a * b + (kAccumulate ? d : 0),
// a from registers (binary16 pairs), b from shared memory through `b_desc`,
// K-major (no transpose).
template <bool kAccumulate>
__device__ __forceinline__ void WgmmaF16(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc) {
#ifdef GMMSCORE_WGMMA_ENABLED
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, %37, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "n"(kAccumulate ? 1 : 0));
#endif
}

// 2^e as a float, for |e| <= 126 (exact, no libm).
__device__ __forceinline__ float PowerOfTwo(int e) { return __int_as_float((127 + e) << 23); }

// A fragments (mma m16n8k16 layout, per warp of the warpgroup) of this
// warp's 16 frames: register r of step s holds frame group + 8 (r & 1),
// columns 16 s + 2 thread + 8 (r >> 1) + {0, 1}, as binary16 big and small
// parts of y or y^2 times the column's frame scale. A frame whose largest
// scaled value passes kLargestScaled is scaled down by 2^-n first (exact);
// `frame_up` gets 2^n (1 for the rest), for the epilogue to undo it.
template <int kSteps>
__device__ __forceinline__ void SplitHalfFrameFragments(const HalfTensorCoreArgs& args, int64_t first_frame,
                                                        int group, int thread, uint32_t (&a_big)[kSteps][4],
                                                        uint32_t (&a_small)[kSteps][4], float (&frame_up)[2]) {
  float value[kSteps][4][2];
  float largest[2] = {0.0f, 0.0f};
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t frame = first_frame + group + (r & 1) * 8;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int k = s * 16 + 2 * thread + (r >> 1) * 8 + e;
        float v = 0.0f;
        if (frame < args.num_frames && k < 2 * args.dim) {
          const int d = k < args.dim ? k : k - args.dim;
          const float y = args.features[frame * args.dim + d] - args.center[d];
          v = (k < args.dim ? y : y * y) * args.frame_scale[k];
        }
        value[s][r][e] = v;
        largest[r & 1] = fmaxf(largest[r & 1], fabsf(v));
      }
    }
  }
  float down[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    largest[h] = fmaxf(largest[h], __shfl_xor_sync(0xffffffffu, largest[h], 1));
    largest[h] = fmaxf(largest[h], __shfl_xor_sync(0xffffffffu, largest[h], 2));
    // Biased exponent 141 is 2^14 = kLargestScaled: bring such a frame's
    // largest value into [2^13, 2^14). NaN and infinity keep theirs.
    const int biased = (__float_as_int(largest[h]) >> 23) & 0xFF;
    const int shift = biased >= 141 && biased < 255 ? biased - 140 : 0;
    down[h] = PowerOfTwo(-shift);
    frame_up[h] = PowerOfTwo(shift);
  }
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float v0 = value[s][r][0] * down[r & 1];
      const float v1 = value[s][r][1] * down[r & 1];
      const __half2 big = __floats2half2_rn(v0, v1);
      const float2 back = __half22float2(big);
      const __half2 small = __floats2half2_rn(v0 - back.x, v1 - back.y);
      a_big[s][r] = *reinterpret_cast<const uint32_t*>(&big);
      a_small[s][r] = *reinterpret_cast<const uint32_t*>(&small);
    }
  }
}

template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocks)
    WgmmaHalfLoglikKernel(const HalfTensorCoreArgs args) {
  static_assert(Policy::kMinBlocks * Policy::SharedBytes(16 * Policy::kSteps) <= kSharedBytesPerSmSm90,
                "wgmma f16 stages exceed an sm_90 SM's shared memory at kMinBlocks blocks");
  using P = Policy;
  extern __shared__ __align__(128) uint4 shared_wh[];
  const int cols = args.cols;
  const uint32_t shared_base = static_cast<uint32_t>(__cvta_generic_to_shared(shared_wh));
  const uint32_t stage_bytes = static_cast<uint32_t>(P::StageBytes(cols));
  const uint32_t matrix_bytes = stage_bytes / 2;  // big, then small
  // After the stages' matrices, each stage's table: the chunk's 64 K values
  // and its 8 row groups' states, copied with the chunk so that the fold
  // reads them from shared memory. Read from global memory in the fold,
  // their latency was 47% of the warps' stall cycles (Nsight Compute, H100).
  const uint32_t tables = shared_base + P::kStages * stage_bytes;
  const float* const table_values =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(shared_wh) + P::kStages * stage_bytes);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int group = lane >> 2;
  const int thread = lane & 3;
  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * P::kFrames + warp * 16;

  const WgmmaSpan span = BlockSpan<P::kChunkGroups>(args.range_begin, args.num_ranges);
  const int span_begin = span.begin;
  const int span_end = span.end;
  const int chunks = span.chunks;

  // Chunk c into stage c % kStages: a k-step of 16 halves is 32 bytes a
  // row, the TF32 kernel's swizzled block (SwizzledUnitOffset).
  auto load_chunk = [&](int c) {
    if (c < chunks) {
      CopyChunkAsync<P::kChunkRows, P::kThreads>(
          args.big, args.small, static_cast<int64_t>(span_begin + c * P::kChunkGroups) * 8,
          cols * static_cast<int>(sizeof(uint16_t)),
          shared_base + static_cast<uint32_t>(c % P::kStages) * stage_bytes, matrix_bytes);
      const int first_group = span_begin + c * P::kChunkGroups;
      const uint32_t table = tables + static_cast<uint32_t>(c % P::kStages) * P::kTableBytes;
      const int t = threadIdx.x;
      if (t < P::kChunkRows / 4) {
        CopyAsync16(table + 16 * t, args.gconst + static_cast<int64_t>(first_group) * 8 + 4 * t);
      } else if (t < P::kChunkRows / 4 + P::kChunkGroups && first_group + t - P::kChunkRows / 4 < span_end) {
        const int j = t - P::kChunkRows / 4;
        CopyAsync4(table + 4 * (P::kChunkRows + j), args.row_group_state + first_group + j);
      }
    }
    CopyAsyncCommit();
  };

  load_chunk(0);

  uint32_t a_big[P::kSteps][4], a_small[P::kSteps][4];
  float frame_up[2];
  SplitHalfFrameFragments<P::kSteps>(args, first_frame, group, thread, a_big, a_small, frame_up);

  int state = -1;
  float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};
  auto flush = [&]() {
    FlushQuadLogSums(run_max, run_sum, state, first_frame, group, thread, args.num_frames, args.num_states,
                     args.loglikes);
  };

  // d[4j..4j+3]: row group j, frames (group, group, group + 8, group + 8),
  // rows (2 thread, 2 thread + 1) of it; the score is K + d, with the
  // frame's down-scaling undone.
  auto fold = [&](const float (&d)[32], int c) {
    const int first_group = span_begin + c * P::kChunkGroups;
    const float* table = table_values + (c % P::kStages) * (P::kTableBytes / 4);
    const int* table_states = reinterpret_cast<const int*>(table + P::kChunkRows);
#pragma unroll
    for (int j = 0; j < P::kChunkGroups; ++j) {
      if (first_group + j >= span_end) break;
      const int tile_state = table_states[j];
      const float2 gconst = reinterpret_cast<const float2*>(table)[4 * j + thread];  // rows 8j + 2 thread, + 1
      if (tile_state != state) {
        flush();
        state = tile_state;
      }
      LogAdd(fmaf(d[4 * j + 0], frame_up[0], gconst.x), run_max[0], run_sum[0]);
      LogAdd(fmaf(d[4 * j + 1], frame_up[0], gconst.y), run_max[0], run_sum[0]);
      LogAdd(fmaf(d[4 * j + 2], frame_up[1], gconst.x), run_max[1], run_sum[1]);
      LogAdd(fmaf(d[4 * j + 3], frame_up[1], gconst.y), run_max[1], run_sum[1]);
    }
  };

  // Small products first, then big x big (as in the TF32 kernel).
  auto issue = [&](float (&d)[32], int c) {
    const uint32_t stage = shared_base + static_cast<uint32_t>(c % P::kStages) * stage_bytes;
    WgmmaFence();
#pragma unroll
    for (int s = 0; s < P::kSteps; ++s) {
      if (s * 16 < cols) {
        const uint64_t big_desc = SwizzledStepDescriptor<P::kChunkRows>(stage, s);
        if (s == 0) {
          WgmmaF16<false>(d, a_small[s], big_desc);
        } else {
          WgmmaF16<true>(d, a_small[s], big_desc);
        }
        WgmmaF16<true>(d, a_big[s], SwizzledStepDescriptor<P::kChunkRows>(stage + matrix_bytes, s));
      }
    }
#pragma unroll
    for (int s = 0; s < P::kSteps; ++s) {
      if (s * 16 < cols) WgmmaF16<true>(d, a_big[s], SwizzledStepDescriptor<P::kChunkRows>(stage, s));
    }
    WgmmaCommit();
  };

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

#endif  // GMMSCORE_KERNELS_CUDA_WGMMA_HALF_LOGLIK_KERNEL_CUH_
