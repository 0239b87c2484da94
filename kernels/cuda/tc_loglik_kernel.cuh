// The tensor-core likelihood kernel: 3xTF32 MMAs (mma.sync m16n8k8) on the
// GEMM form [K, u, v] . [1, y, y^2], with the log-sum-exp over each state's
// Gaussians fused into the epilogue.
//
// Roles: frames are the MMA's M (16 per warp, 4 warps = 64 frames per
// block) and Gaussians its N (an n-tile of 8 = one row group of
// TensorCoreLayout, which belongs to a single state). A block scores one
// range of whole states. Each warp keeps its frames' A fragments, split
// into TF32 big and small parts, in registers for the whole range; the
// model, pre-split on the host, streams through shared memory in chunks of
// 64 rows that all 4 warps share. Per n-tile a warp issues 3 MMAs per
// k-step (small x big, big x small, big x big: float32-class accuracy, each
// into its own accumulator, two n-tiles at a time, for independent chains) and
// folds the 16 x 8 scores into a running (max, sum) per frame held in the
// lanes' registers; only when the state changes do the 4 lanes of a frame
// combine theirs (two shuffles) and write the log-likelihood.
#ifndef GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/internal/log_math.cuh"
#include "kernels/cuda/internal/tensor_core_args.h"
#include "kernels/cuda/internal/tf32_mma.cuh"
#include "kernels/cuda/loglik_policy.h"

namespace gmmscore {

// A warp's 16 frames (first_frame onwards) as the A fragments of m16n8k8
// TF32 MMAs: rows group and group + 8, columns thread and thread + 4 of every
// k-step, each frame expanded to [1, y, y^2, 0...] (y = x - center) and split
// into TF32 big and small parts for 3xTF32. Frames past num_frames and
// columns past 2 dim are 0. The mma.sync kernel below and the wgmma kernel
// both keep the frames' operand in registers this way.
template <int kSteps>
__device__ __forceinline__ void SplitFrameFragments(const float* __restrict__ features, const float* __restrict__ center,
                                                    int dim, int64_t num_frames, int64_t first_frame, int group,
                                                    int thread, uint32_t (&a_big)[kSteps][4],
                                                    uint32_t (&a_small)[kSteps][4]) {
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t frame = first_frame + group + (r & 1) * 8;
      const int k = s * 8 + thread + (r >> 1) * 4;
      float value = 0.0f;
      if (frame < num_frames && k <= 2 * dim) {
        if (k == 0) {
          value = 1.0f;
        } else {
          const int d = (k - 1) % dim;
          const float y = features[frame * dim + d] - center[d];
          value = k <= dim ? y : y * y;
        }
      }
      a_big[s][r] = ToTf32(value);
      a_small[s][r] = ToTf32(value - __uint_as_float(a_big[s][r]));
    }
  }
}

// The running log-sums of frames group (index 0) and group + 8 (index 1),
// each lane's over its own Gaussian columns: merged over the 4 lanes of the
// quad, written as `state`'s score by lane thread 0 (unless state < 0 or
// the frame is past num_frames), then reset for the next state.
__device__ __forceinline__ void FlushQuadLogSums(float (&run_max)[2], float (&run_sum)[2], int state,
                                                 int64_t first_frame, int group, int thread, int64_t num_frames,
                                                 int64_t num_states, float* __restrict__ loglikes) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int offset = 1; offset <= 2; offset <<= 1) {
      const float other_max = __shfl_xor_sync(0xffffffffu, run_max[h], offset);
      const float other_sum = __shfl_xor_sync(0xffffffffu, run_sum[h], offset);
      MergeLogSum(other_max, other_sum, run_max[h], run_sum[h]);
    }
    const int64_t frame = first_frame + group + h * 8;
    if (thread == 0 && state >= 0 && frame < num_frames) {
      loglikes[frame * num_states + state] = run_max[h] + __logf(run_sum[h]);
    }
    run_max[h] = -INFINITY;
    run_sum[h] = 0.0f;
  }
}

template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    TensorCoreLoglikKernel(const TensorCoreArgs args) {
  // The widest features this instance takes must fit every GPU it runs on.
  static_assert(Policy::SharedBytes(8 * Policy::kSteps) <= kSharedBytesPerBlockSm86,
                "tensor-core chunks exceed the shared memory of sm_86/sm_89");
  using P = Policy;
  extern __shared__ float4 shared_tc[];
  const int cols = args.cols;
  const int stride = cols + P::kRowPad;
  float* big_tile = reinterpret_cast<float*>(shared_tc);
  float* small_tile = big_tile + P::kChunkRows * stride;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int group = lane >> 2;  // A/C row (frame) within the m-tile, B column (Gaussian)
  const int thread = lane & 3;  // A column (k) / B row (k); C column pair
  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * P::kFrames + warp * 16;

  // This warp's 16 frames as split TF32 A fragments.
  uint32_t a_big[P::kSteps][4], a_small[P::kSteps][4];
  SplitFrameFragments<P::kSteps>(args.features, args.center, args.dim, args.num_frames, first_frame, group, thread,
                                 a_big, a_small);

  // Running log-sum of the current state for frames group (index 0) and
  // group + 8 (index 1), over this lane's Gaussian columns.
  int state = -1;
  float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};
  auto flush = [&]() {
    FlushQuadLogSums(run_max, run_sum, state, first_frame, group, thread, args.num_frames, args.num_states,
                     args.loglikes);
  };

  const int range_first = args.range_begin[blockIdx.y];
  const int range_end = args.range_begin[blockIdx.y + 1];
  for (int chunk = range_first; chunk < range_end; chunk += P::kChunkRows / 8) {
    __syncthreads();  // every warp is done with the previous chunk
    const int64_t base = static_cast<int64_t>(chunk) * 8 * cols;
    for (int i = threadIdx.x; i < P::kChunkRows * cols / 4; i += P::kThreads) {
      const int r = (4 * i) / cols;
      const int c = 4 * i - r * cols;
      const int64_t at = base + static_cast<int64_t>(r) * cols + c;
      *reinterpret_cast<float4*>(big_tile + r * stride + c) = __ldg(reinterpret_cast<const float4*>(args.big + at));
      *reinterpret_cast<float4*>(small_tile + r * stride + c) =
          __ldg(reinterpret_cast<const float4*>(args.small + at));
    }
    __syncthreads();

    // Two n-tiles at a time, each with its three products in separate
    // accumulators: six independent MMA chains, so the tensor pipe is not
    // left waiting on one accumulator's previous MMA.
    const int tiles = min(P::kChunkRows / 8, range_end - chunk);
    for (int j = 0; j < tiles; j += 2) {
      const bool pair = j + 1 < tiles;  // uniform over the warp
      float acc[2][3][4] = {};
      const float* big_row = big_tile + (j * 8 + group) * stride + thread;
      const float* small_row = small_tile + (j * 8 + group) * stride + thread;
#pragma unroll
      for (int s = 0; s < P::kSteps; ++s) {
        if (s * 8 < cols) {
#pragma unroll
          for (int t = 0; t < 2; ++t) {
            if (t == 1 && !pair) break;
            const int at = t * 8 * stride + s * 8;
            const uint32_t bb0 = __float_as_uint(big_row[at]);
            const uint32_t bb1 = __float_as_uint(big_row[at + 4]);
            const uint32_t bs0 = __float_as_uint(small_row[at]);
            const uint32_t bs1 = __float_as_uint(small_row[at + 4]);
            MmaTf32(acc[t][0], a_small[s], bb0, bb1);
            MmaTf32(acc[t][1], a_big[s], bs0, bs1);
            MmaTf32(acc[t][2], a_big[s], bb0, bb1);
          }
        }
      }
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        if (t == 1 && !pair) break;
        const int tile_state = args.row_group_state[chunk + j + t];  // uniform over the warp
        if (tile_state != state) {
          flush();
          state = tile_state;
        }
        float score[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) score[r] = (acc[t][0][r] + acc[t][1][r]) + acc[t][2][r];
        // score: (frame group, Gaussians 2t, 2t+1), (frame group + 8, same).
        LogAdd(score[0], run_max[0], run_sum[0]);
        LogAdd(score[1], run_max[0], run_sum[0]);
        LogAdd(score[2], run_max[1], run_sum[1]);
        LogAdd(score[3], run_max[1], run_sum[1]);
      }
    }
  }
  flush();
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_TC_LOGLIK_KERNEL_CUH_
