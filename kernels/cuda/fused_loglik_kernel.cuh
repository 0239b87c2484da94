// The fused likelihood kernel (Vanek et al. 2011, Algorithm 1).
//
// A block of Policy::kThreads threads scores Policy::kStatesPerBlock states
// (one per thread) on Policy::kFramesPerBlock frames. The centred frames
// (y = x - c) sit in shared memory, where every thread reads the same word
// (a broadcast, no bank conflicts). Each thread streams its state's Gaussians
// as float4 pairs (a, b) laid out by BuildFusedLayout so a warp's loads are
// contiguous, prefetching the next pair while the current one feeds two FMAs
// per dimension and frame (z = a y + b; acc -= z^2, the squared-distance form
// that fused_layout.h explains); a running log-add per frame lives in
// registers and K' is added after the dot products, as in the paper.
#ifndef GMMSCORE_KERNELS_CUDA_FUSED_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_FUSED_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/fused_layout.h"
#include "kernels/cuda/internal/frame_staging.cuh"
#include "kernels/cuda/internal/log_math.cuh"

namespace gmmscore {

struct FusedKernelArgs {
  const float4* ab;
  const float* gconsts;
  const int32_t* block_gaussians;
  const int64_t* block_ab_offset;
  const int64_t* block_gconst_offset;
  const int32_t* slot_state;
  const float* center;    // dim
  const float* features;  // num_frames x dim, row-major
  int64_t num_frames;
  int dim;
  int dim4;
  int num_states;
  float* loglikes;  // num_frames x num_states, row-major
};

// acc - sum_i (a_i x_i + b_i)^2 over one quad of dimensions: 8 FMAs. b_i
// is in component BComponent(i) (fused_layout.h).
static_assert(BComponent(0) == 1 && BComponent(1) == 2 && BComponent(2) == 3 && BComponent(3) == 0,
              "SubtractSquaredDistance reads b rotated by one component");
__device__ __forceinline__ float SubtractSquaredDistance(float4 a, float4 b, float4 x, float acc) {
  const float z0 = fmaf(a.x, x.x, b.y);
  const float z1 = fmaf(a.y, x.y, b.z);
  const float z2 = fmaf(a.z, x.z, b.w);
  const float z3 = fmaf(a.w, x.w, b.x);
  acc = fmaf(-z0, z0, acc);
  acc = fmaf(-z1, z1, acc);
  acc = fmaf(-z2, z2, acc);
  return fmaf(-z3, z3, acc);
}

template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads)
    FusedLoglikKernel(const FusedKernelArgs args) {
  constexpr int kFrames = Policy::kFramesPerBlock;
  constexpr int kStates = Policy::kStatesPerBlock;
  static_assert(Policy::kThreads == kStates, "one thread per state");
  extern __shared__ float4 shared_frames[];  // [kFrames][dim4]: y
  const int dim4 = args.dim4;
  float4* y4 = shared_frames;

  // Frame tiles run along x so the tiles that share a block of states are
  // scheduled together and read its parameters from L2 rather than DRAM.
  const int block = blockIdx.y;
  const int lane = threadIdx.x;
  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * kFrames;

  StageFrames<kFrames, false>(args.features, args.center, args.num_frames, args.dim, dim4,
                              first_frame, lane, kStates, reinterpret_cast<float*>(y4));
  __syncthreads();

  float running_max[kFrames];
  float running_sum[kFrames];
  StartLogSums(running_max, running_sum);

  const int gaussians = args.block_gaussians[block];
  const float4* ab = args.ab + args.block_ab_offset[block] + lane;
  const float* gconst = args.gconsts + args.block_gconst_offset[block] + lane;

  for (int g = 0; g < gaussians; ++g) {
    float acc[kFrames];
#pragma unroll
    for (int f = 0; f < kFrames; ++f) acc[f] = 0.0f;

    float4 a = __ldg(ab);
    float4 b = __ldg(ab + kStates);
    for (int q = 0; q < dim4; ++q) {
      // Prefetch the next quad (or the next Gaussian's first) before using
      // this one, to keep a load in flight under the FMAs.
      const float4* next = ab + 2 * kStates;
      float4 a_next = a, b_next = b;
      if (q + 1 < dim4 || g + 1 < gaussians) {
        a_next = __ldg(next);
        b_next = __ldg(next + kStates);
      }
#pragma unroll
      for (int f = 0; f < kFrames; ++f) acc[f] = SubtractSquaredDistance(a, b, y4[f * dim4 + q], acc[f]);
      a = a_next;
      b = b_next;
      ab = next;
    }
    const float k = __ldg(gconst + g * kStates);
#pragma unroll
    for (int f = 0; f < kFrames; ++f) LogAdd(acc[f] + k, running_max[f], running_sum[f]);
  }

  const int state = args.slot_state[block * kStates + lane];
  if (state < 0) return;
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    const int64_t frame = first_frame + f;
    if (frame < args.num_frames) {
      args.loglikes[frame * args.num_states + state] = running_max[f] + __logf(running_sum[f]);
    }
  }
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FUSED_LOGLIK_KERNEL_CUH_
