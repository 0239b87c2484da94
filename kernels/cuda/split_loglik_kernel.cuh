// The split fused kernel: the fused kernel's layout and arithmetic, with a
// state's Gaussians shared out over kSplits thread groups of a block and
// over gridDim.z blocks, for windows too short to fill the GPU otherwise.
//
// The paper's grid has (S / 64) x (T / F) blocks of 64 threads, each thread
// walking all of its state's Gaussians alone: 79 blocks for 5000 states at
// T = 8, on a 132-SM GPU, so the model streams at a tenth of the memory
// bandwidth (docs/PERFORMANCE.md). Here thread (split, lane) takes Gaussians
// split, split + kSplits, ... of slice blockIdx.z, and warps stay coalesced
// because a warp is 32 lanes of one split. The splits' running log-sums are
// merged in shared memory; with one slice the block writes log-likelihoods,
// with several it writes (max, sum) partials that MergeSlicesKernel folds.
#ifndef GMMSCORE_KERNELS_CUDA_SPLIT_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_SPLIT_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/fused_loglik_kernel.cuh"
#include "kernels/cuda/internal/log_math.cuh"

namespace gmmscore {

// One block's work: frame tile `tile` of state block `block`, slice `slice`
// of `slices`. `partials` (used when slices > 1): [slice][frame][state]
// pairs of (max, sum), laid out as two planes of slices * frames * states.
template <typename Policy>
__device__ __forceinline__ void SplitBlock(const FusedKernelArgs& args, int tile, int block, int slice, int slices,
                                           float* __restrict__ partials) {
  constexpr int kFrames = Policy::kFramesPerBlock;
  constexpr int kStates = Policy::kStatesPerBlock;
  constexpr int kSplits = Policy::kSplits;
  static_assert(Policy::kThreads == kStates * kSplits, "one thread per state and split");
  extern __shared__ float4 shared[];  // [kFrames][dim4] frames, then the merge area
  const int dim4 = args.dim4;
  float4* y4 = shared;
  float* merge = reinterpret_cast<float*>(shared + kFrames * dim4);  // [2][kSplits][kFrames][kStates]

  const int lane = threadIdx.x % kStates;
  const int split = threadIdx.x / kStates;
  const int64_t first_frame = static_cast<int64_t>(tile) * kFrames;

  StageFrames<kFrames, false>(args.features, args.center, args.num_frames, args.dim, dim4,
                              first_frame, threadIdx.x, Policy::kThreads,
                              reinterpret_cast<float*>(y4));
  __syncthreads();

  float running_max[kFrames];
  float running_sum[kFrames];
  StartLogSums(running_max, running_sum);

  // This block's slice of the state block's Gaussians.
  const int gaussians = args.block_gaussians[block];
  const int per_slice = (gaussians + slices - 1) / slices;
  const int slice_begin = slice * per_slice;
  const int slice_end = min(gaussians, slice_begin + per_slice);
  const float4* ab_block = args.ab + args.block_ab_offset[block] + lane;
  const float* gconst = args.gconsts + args.block_gconst_offset[block] + lane;
  const int stride = dim4 * 2 * kStates;  // float4s per Gaussian

  for (int g = slice_begin + split; g < slice_end; g += kSplits) {
    const float4* ab = ab_block + static_cast<int64_t>(g) * stride;
    float acc[kFrames];
#pragma unroll
    for (int f = 0; f < kFrames; ++f) acc[f] = 0.0f;
    float4 a = __ldg(ab);
    float4 b = __ldg(ab + kStates);
    for (int q = 0; q < dim4; ++q) {
      float4 a_next = a, b_next = b;
      if (q + 1 < dim4) {
        a_next = __ldg(ab + 2 * kStates);
        b_next = __ldg(ab + 3 * kStates);
      }
#pragma unroll
      for (int f = 0; f < kFrames; ++f) acc[f] = SubtractSquaredDistance(a, b, y4[f * dim4 + q], acc[f]);
      a = a_next;
      b = b_next;
      ab += 2 * kStates;
    }
    const float k = __ldg(gconst + g * kStates);
#pragma unroll
    for (int f = 0; f < kFrames; ++f) LogAdd(acc[f] + k, running_max[f], running_sum[f]);
  }

  // Merge the splits: every split parks its (max, sum); split 0 folds them.
  float* merge_max = merge;
  float* merge_sum = merge + kSplits * kFrames * kStates;
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    merge_max[(split * kFrames + f) * kStates + lane] = running_max[f];
    merge_sum[(split * kFrames + f) * kStates + lane] = running_sum[f];
  }
  __syncthreads();
  if (split != 0) return;
  for (int other = 1; other < kSplits; ++other) {
#pragma unroll
    for (int f = 0; f < kFrames; ++f) {
      MergeLogSum(merge_max[(other * kFrames + f) * kStates + lane],
                  merge_sum[(other * kFrames + f) * kStates + lane], running_max[f], running_sum[f]);
    }
  }

  const int state = args.slot_state[block * kStates + lane];
  if (state < 0) return;
  const int64_t plane = static_cast<int64_t>(slices) * args.num_frames * args.num_states;
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    const int64_t frame = first_frame + f;
    if (frame >= args.num_frames) continue;
    if (slices == 1) {
      args.loglikes[frame * args.num_states + state] = running_max[f] + __logf(running_sum[f]);
    } else {
      const int64_t at = (static_cast<int64_t>(slice) * args.num_frames + frame) * args.num_states + state;
      partials[at] = running_max[f];
      partials[plane + at] = running_sum[f];
    }
  }
}

template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    SplitLoglikKernel(const FusedKernelArgs args, float* __restrict__ partials) {
  SplitBlock<Policy>(args, blockIdx.x, blockIdx.y, blockIdx.z, gridDim.z, partials);
}

// One model's window in a multi-model launch: its blocks are
// [first_block, first_block + tiles * state_blocks) of the flat grid.
struct SplitJob {
  FusedKernelArgs args;
  int64_t first_block;
  int tiles;
};

// Several models, each on its own frames, in one launch (one slice each:
// many models give the grid enough blocks). A block finds its job by binary
// search over the jobs' first blocks.
template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    MultiModelSplitKernel(const SplitJob* __restrict__ jobs, int num_jobs) {
  int lo = 0, hi = num_jobs - 1;
  const int64_t flat = blockIdx.x;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (jobs[mid].first_block <= flat) lo = mid; else hi = mid - 1;
  }
  const SplitJob& job = jobs[lo];
  const int64_t local = flat - job.first_block;
  SplitBlock<Policy>(job.args, static_cast<int>(local % job.tiles), static_cast<int>(local / job.tiles), 0, 1,
                     nullptr);
}

// loglikes[t][s] = log of the merged (max, sum) over `slices` partials.
static __global__ void MergeSlicesKernel(const float* __restrict__ partials, int slices, int64_t count,
                                  float* __restrict__ loglikes) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t plane = slices * count;
  float max = -INFINITY, sum = 0.0f;
  for (int z = 0; z < slices; ++z) MergeLogSum(partials[z * count + i], partials[plane + z * count + i], max, sum);
  loglikes[i] = max + __logf(sum);
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_SPLIT_LOGLIK_KERNEL_CUH_
