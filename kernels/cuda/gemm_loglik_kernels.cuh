// Kernels of the two-kernel path (Vanek et al. 2011, section 3) around the
// cuBLAS SGEMM, and the per-frame total over states. The tied-mixture path
// (tied_mixture_kernels.cu) includes this file too, so its non-template
// kernels are `static`: each translation unit gets its own copy.
#ifndef GMMSCORE_KERNELS_CUDA_GEMM_LOGLIK_KERNELS_CUH_
#define GMMSCORE_KERNELS_CUDA_GEMM_LOGLIK_KERNELS_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace gmmscore {

// Element i of expanded = [1, y, y^2] rows (1 + 2 dim wide) with
// y = features[t][0 .. dim) - center, frame t at features + t * row_stride.
__device__ __forceinline__ void ExpandFeatureElement(const float* __restrict__ features, int64_t row_stride,
                                                     const float* __restrict__ center, int dim, int64_t i,
                                                     float* __restrict__ expanded) {
  const int cols = 1 + 2 * dim;
  const int64_t t = i / cols;
  const int c = static_cast<int>(i - t * cols);
  float value = 1.0f;
  if (c > 0) {
    const int d = (c - 1) % dim;
    const float y = features[t * row_stride + d] - center[d];
    value = c <= dim ? y : y * y;
  }
  expanded[i] = value;
}

// expanded[t] = [1, y, y^2] with y = features[t] - center (eq. (3)).
static __global__ void ExpandFeaturesKernel(const float* __restrict__ features,
                                            const float* __restrict__ center, int64_t num_frames, int dim,
                                            float* __restrict__ expanded) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= num_frames * (1 + 2 * dim)) return;
  ExpandFeatureElement(features, dim, center, dim, i, expanded);
}

// The same for a slice of each frame: dims [0, dim) of rows `row_stride`
// apart (a feature stream of a tied-mixture model: features + its offset).
static __global__ void ExpandStridedFeaturesKernel(const float* __restrict__ features, int64_t row_stride,
                                                   const float* __restrict__ center, int64_t num_frames,
                                                   int dim, float* __restrict__ expanded) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= num_frames * (1 + 2 * dim)) return;
  ExpandFeatureElement(features, row_stride, center, dim, i, expanded);
}

__device__ __forceinline__ float WarpMax(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

__device__ __forceinline__ float WarpSum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// One warp per (frame, state): log-sum-exp over the state's Gaussian scores
// scores[t][offsets[s] .. offsets[s+1]), lanes striding over the Gaussians
// so the reads are contiguous.
static __global__ void SegmentedLogSumExpKernel(const float* __restrict__ scores,
                                         const int64_t* __restrict__ state_offsets,
                                         int64_t num_frames, int num_states, int64_t num_gaussians,
                                         float* __restrict__ loglikes) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (warp >= num_frames * num_states) return;
  const int64_t t = warp / num_states;
  const int s = static_cast<int>(warp - t * num_states);
  const float* row = scores + t * num_gaussians;
  const int64_t begin = state_offsets[s], end = state_offsets[s + 1];
  float max = -INFINITY;
  for (int64_t g = begin + lane; g < end; g += 32) max = fmaxf(max, row[g]);
  max = WarpMax(max);
  float sum = 0.0f;
  for (int64_t g = begin + lane; g < end; g += 32) sum += __expf(row[g] - max);
  sum = WarpSum(sum);
  if (lane == 0) loglikes[t * num_states + s] = max + __logf(sum);
}

// One block per frame: log-sum-exp over its states.
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    FrameTotalsKernel(const float* __restrict__ loglikes, int num_states, float* __restrict__ totals) {
  __shared__ float partial[kThreads / 32];
  const float* row = loglikes + static_cast<int64_t>(blockIdx.x) * num_states;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  float max = -INFINITY;
  for (int s = threadIdx.x; s < num_states; s += kThreads) max = fmaxf(max, row[s]);
  max = WarpMax(max);
  if (lane == 0) partial[warp] = max;
  __syncthreads();
  max = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) max = fmaxf(max, partial[w]);
  __syncthreads();

  float sum = 0.0f;
  for (int s = threadIdx.x; s < num_states; s += kThreads) sum += __expf(row[s] - max);
  sum = WarpSum(sum);
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
    totals[blockIdx.x] = max + __logf(total);
  }
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_GEMM_LOGLIK_KERNELS_CUH_
