// The tensor-core likelihood kernel: 3xTF32 MMAs (mma.sync m16n8k8) on the
// GEMM form [K, u, v] . [1, y, y^2], with the log-sum-exp over each state's
// Gaussians fused into the epilogue.
//
// A block of 4 warps scores one range of whole states (TensorCoreLayout) on
// 64 frames. The expanded frames, split into a TF32 "big" part and the TF32
// rounding of the rest ("small"), stay in shared memory for the whole range;
// the model streams through in 64-row chunks, each warp multiplying 16 rows
// by the 64 frames as 8 tiles of m16n8 with 3 MMAs per k-step (small x big,
// big x small, big x big: float32-class accuracy, the 3xTF32 scheme). Each
// row group of 8 (one state's, by construction) is reduced over its rows
// with warp shuffles to a (max, sum) per frame; 64 threads, one per frame,
// then fold the row groups in order into a running log-sum per state and
// write each state's log-likelihood once its last row group is folded.
#ifndef GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/split_loglik_kernel.cuh"

namespace gmmscore {

struct TensorCoreArgs {
  const float* params;            // (rows + 64) x cols, see TensorCoreLayout
  const int32_t* row_group_state;
  const int32_t* range_begin;
  const float* center;
  const float* features;          // num_frames x dim
  int64_t num_frames;
  int dim;
  int cols;
  int num_states;
  float* loglikes;                // num_frames x num_states
};

struct TensorCorePolicy {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kFrames = 64;        // frames per block (8 MMA n-tiles)
  static constexpr int kChunkRows = 64;     // 16 rows per warp
  static constexpr int kFrameStride = 72;   // 64 + 8: conflict-free B fragment loads
  static constexpr int kRowPad = 4;         // A row stride cols + 4: conflict-free A loads

  static size_t SharedBytes(int cols) {
    return sizeof(float) * (2ull * cols * kFrameStride + 1ull * kChunkRows * (cols + kRowPad) +
                            2ull * (kChunkRows / 8) * kFrames);
  }
};

__device__ __forceinline__ uint32_t ToTf32(float value) {
  uint32_t out;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(value));
  return out;
}

// d += a * b for one m16n8k8 TF32 tile (fragments as the PTX ISA lays them out).
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(TensorCorePolicy::kThreads)
    TensorCoreLoglikKernel(const TensorCoreArgs args) {
  using P = TensorCorePolicy;
  extern __shared__ float4 shared_tc[];
  const int cols = args.cols;
  const int a_stride = cols + P::kRowPad;
  uint32_t* b_big = reinterpret_cast<uint32_t*>(shared_tc);
  uint32_t* b_small = b_big + cols * P::kFrameStride;
  float* a_tile = reinterpret_cast<float*>(b_small + cols * P::kFrameStride);
  float* part_max = a_tile + P::kChunkRows * a_stride;
  float* part_sum = part_max + (P::kChunkRows / 8) * P::kFrames;

  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * P::kFrames;
  const int dim = args.dim;

  // Expanded frames [1, y, y^2, 0...] as TF32 big + small, k-major.
  for (int i = threadIdx.x; i < cols * P::kFrames; i += P::kThreads) {
    const int k = i / P::kFrames;
    const int f = i - k * P::kFrames;
    const int64_t frame = first_frame + f;
    float value = 0.0f;
    if (frame < args.num_frames && k <= 2 * dim) {
      if (k == 0) {
        value = 1.0f;
      } else {
        const int d = (k - 1) % dim;
        const float y = args.features[frame * dim + d] - args.center[d];
        value = k <= dim ? y : y * y;
      }
    }
    const uint32_t big = ToTf32(value);
    b_big[k * P::kFrameStride + f] = big;
    b_small[k * P::kFrameStride + f] = ToTf32(value - __uint_as_float(big));
  }

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int group = lane >> 2;   // row within the 8-row half of the tile
  const int thread = lane & 3;   // k (A) / column pair (C) within the tile
  const int range_first = args.range_begin[blockIdx.y];
  const int range_end = args.range_begin[blockIdx.y + 1];

  // Running log-sum of the state being folded, for frame threadIdx.x (< 64).
  int folding_state = -1;
  float fold_max = -INFINITY, fold_sum = 0.0f;
  auto emit = [&]() {
    const int64_t frame = first_frame + threadIdx.x;
    if (folding_state >= 0 && frame < args.num_frames) {
      args.loglikes[frame * args.num_states + folding_state] = fold_max + __logf(fold_sum);
    }
  };

  for (int chunk = range_first; chunk < range_end; chunk += P::kChunkRows / 8) {
    __syncthreads();  // frames staged; previous chunk's tile and partials consumed
    const float* source = args.params + static_cast<int64_t>(chunk) * 8 * cols;
    for (int i = threadIdx.x; i < P::kChunkRows * cols / 4; i += P::kThreads) {
      const int r = (4 * i) / cols;
      const int c = 4 * i - r * cols;
      *reinterpret_cast<float4*>(a_tile + r * a_stride + c) =
          __ldg(reinterpret_cast<const float4*>(source + static_cast<int64_t>(r) * cols + c));
    }
    __syncthreads();

    float acc[P::kFrames / 8][4];
#pragma unroll
    for (int j = 0; j < P::kFrames / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const float* a_rows = a_tile + warp * 16 * a_stride;
    for (int k0 = 0; k0 < cols; k0 += 8) {
      const float a_value[4] = {a_rows[group * a_stride + k0 + thread], a_rows[(group + 8) * a_stride + k0 + thread],
                                a_rows[group * a_stride + k0 + thread + 4],
                                a_rows[(group + 8) * a_stride + k0 + thread + 4]};
      uint32_t a_big[4], a_small[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        a_big[r] = ToTf32(a_value[r]);
        a_small[r] = ToTf32(a_value[r] - __uint_as_float(a_big[r]));
      }
#pragma unroll
      for (int j = 0; j < P::kFrames / 8; ++j) {
        const int n = j * 8 + group;
        const uint32_t bb0 = b_big[(k0 + thread) * P::kFrameStride + n];
        const uint32_t bb1 = b_big[(k0 + thread + 4) * P::kFrameStride + n];
        const uint32_t bs0 = b_small[(k0 + thread) * P::kFrameStride + n];
        const uint32_t bs1 = b_small[(k0 + thread + 4) * P::kFrameStride + n];
        MmaTf32(acc[j], a_small, bb0, bb1);
        MmaTf32(acc[j], a_big, bs0, bs1);
        MmaTf32(acc[j], a_big, bb0, bb1);
      }
    }

    // Row group 2w holds rows group (acc[.][0..1]), 2w + 1 rows group + 8
    // (acc[.][2..3]); lanes sharing `thread` hold the 8 rows of a column.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int j = 0; j < P::kFrames / 8; ++j) {
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          const float value = acc[j][half * 2 + p];
          float max = value;
          max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, 4));
          max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, 8));
          max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, 16));
          float sum = __expf(value - max);
          sum += __shfl_xor_sync(0xffffffffu, sum, 4);
          sum += __shfl_xor_sync(0xffffffffu, sum, 8);
          sum += __shfl_xor_sync(0xffffffffu, sum, 16);
          if (group == 0) {
            const int at = (warp * 2 + half) * P::kFrames + j * 8 + thread * 2 + p;
            part_max[at] = max;
            part_sum[at] = sum;
          }
        }
      }
    }
    __syncthreads();

    if (threadIdx.x < P::kFrames) {
      for (int rg = 0; rg < P::kChunkRows / 8 && chunk + rg < range_end; ++rg) {
        const int state = args.row_group_state[chunk + rg];
        if (state != folding_state) {
          emit();
          folding_state = state;
          fold_max = -INFINITY;
          fold_sum = 0.0f;
        }
        MergeLogSum(part_max[rg * P::kFrames + threadIdx.x], part_sum[rg * P::kFrames + threadIdx.x], fold_max,
                    fold_sum);
      }
    }
  }
  if (threadIdx.x < P::kFrames) emit();
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_
