// Running log-sum-exp on the device, shared by every likelihood kernel: a
// sum kept as exp(max) * sum, so that adding a term needs one exponential.
//
//   float max = -INFINITY, sum = 0.0f;
//   LogAdd(score, max, sum);             // for each term
//   MergeLogSum(other_max, other_sum, max, sum);   // two partial sums
//   result = max + __logf(sum);
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_LOG_MATH_CUH_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_LOG_MATH_CUH_

#include <cuda_runtime.h>

#include <cmath>

namespace gmmscore {

// Adds exp(a) to the running sum exp(max) * sum with one exponential and no
// branch: whichever of a and max is smaller is scaled down to the larger.
__device__ __forceinline__ void LogAdd(float a, float& max, float& sum) {
  const float larger = fmaxf(a, max);
  const float scale = __expf(fminf(a, max) - larger);
  sum = (a > max) ? fmaf(sum, scale, 1.0f) : sum + scale;
  max = larger;
}

// Merges running log-sum (max_b, sum_b) into (max_a, sum_a).
__device__ __forceinline__ void MergeLogSum(float max_b, float sum_b, float& max_a, float& sum_a) {
  const float larger = fmaxf(max_a, max_b);
  if (larger == -INFINITY) return;  // both empty
  sum_a = sum_a * __expf(max_a - larger) + sum_b * __expf(max_b - larger);
  max_a = larger;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_LOG_MATH_CUH_
