// The prologue the fused, register-blocked and split likelihood kernels
// share: a tile of frames staged centred into shared memory, and the
// per-frame running log-sums started empty.
//
//   StageFrames<kFrames, false>(args.features, args.center, args.num_frames, args.dim,
//                               args.dim4, first_frame, threadIdx.x, blockDim.x, y);
//   __syncthreads();
//   float running_max[kFrames], running_sum[kFrames];
//   StartLogSums(running_max, running_sum);
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_FRAME_STAGING_CUH_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_FRAME_STAGING_CUH_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace gmmscore {

// y = x - center for frames [first_frame, first_frame + kFrames) of a row-
// major window, read in row order (coalesced) by `threads` threads, with
// zeros beyond the window (finite scores that are never written) and in the
// dimension padding up to 4 * dim4 (where the model's a = b = 0, so they add
// nothing). Layout: [frame][padded dim], or with kTransposed [quad][frame][4]
// (the register-blocked kernel's broadcast reads).
template <int kFrames, bool kTransposed>
__device__ __forceinline__ void StageFrames(const float* __restrict__ features,
                                            const float* __restrict__ center, int64_t num_frames,
                                            int dim, int dim4, int64_t first_frame, int thread,
                                            int threads, float* __restrict__ y) {
  const int padded_dim = dim4 * 4;
  for (int i = thread; i < kFrames * padded_dim; i += threads) {
    const int f = i / padded_dim;
    const int d = i - f * padded_dim;
    const int64_t frame = first_frame + f;
    float value = 0.0f;
    if (frame < num_frames && d < dim) value = features[frame * dim + d] - center[d];
    y[kTransposed ? ((d >> 2) * kFrames + f) * 4 + (d & 3) : i] = value;
  }
}

// Empty running sums (LogAdd's exp(max) * sum) for every frame of a tile.
template <int kFrames>
__device__ __forceinline__ void StartLogSums(float (&running_max)[kFrames],
                                             float (&running_sum)[kFrames]) {
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    running_max[f] = -INFINITY;
    running_sum[f] = 0.0f;
  }
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_FRAME_STAGING_CUH_
