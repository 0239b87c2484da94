#include "kernels/hmm/cuda/hmm_kernels.h"

#include <cfloat>
#include <cmath>

namespace gmmscore::hmm_cuda {
namespace {

constexpr int kThreads = 256;

// Block-wide reduction of one double per thread (sum or max); every thread
// gets the result.
template <bool kMax>
__device__ double BlockReduce(double value) {
  __shared__ double scratch[kThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double other = __shfl_down_sync(0xffffffffu, value, offset);
    value = kMax ? fmax(value, other) : value + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kThreads / 32 ? scratch[lane] : (kMax ? -INFINITY : 0.0);
    for (int offset = 16; offset > 0; offset >>= 1) {
      const double other = __shfl_down_sync(0xffffffffu, value, offset);
      value = kMax ? fmax(value, other) : value + other;
    }
    if (lane == 0) scratch[0] = value;
  }
  __syncthreads();
  const double result = scratch[0];
  __syncthreads();  // scratch is reused by the next call
  return result;
}

__global__ void EmissionsKernel(const float* __restrict__ loglikes, const int64_t* __restrict__ row_base, int64_t t,
                                int stride, const int* __restrict__ emissions, int n, double* __restrict__ b,
                                double* __restrict__ offset) {
  const int r = blockIdx.x;
  const float* ll = loglikes + row_base[r] + t * stride;
  double best = -INFINITY;
  for (int j = threadIdx.x; j < n; j += kThreads) best = fmax(best, static_cast<double>(ll[emissions[j]]));
  best = BlockReduce<true>(best);
  if (best == -INFINITY) best = 0.0;
  for (int j = threadIdx.x; j < n; j += kThreads) b[int64_t{r} * n + j] = exp(static_cast<double>(ll[emissions[j]]) - best);
  if (threadIdx.x == 0) offset[r] = best;
}

__global__ void InitialAlphaKernel(const double* __restrict__ initial, int n, double* __restrict__ alpha) {
  for (int j = threadIdx.x; j < n; j += kThreads) alpha[int64_t{blockIdx.x} * n + j] = initial[j];
}

__global__ void ScaleForwardKernel(double* __restrict__ alpha, const double* __restrict__ b,
                                   const double* __restrict__ offset, int n, double* __restrict__ log_scale,
                                   double* __restrict__ loglike, int* __restrict__ no_path) {
  const int r = blockIdx.x;
  double* a = alpha + int64_t{r} * n;
  double sum = 0.0;
  for (int j = threadIdx.x; j < n; j += kThreads) sum += (a[j] *= b[int64_t{r} * n + j]);
  sum = BlockReduce<false>(sum);
  if (!(sum > 0.0)) {
    if (threadIdx.x == 0) atomicMin(no_path, r);
    return;
  }
  const double inverse = 1.0 / sum;
  for (int j = threadIdx.x; j < n; j += kThreads) a[j] *= inverse;
  if (threadIdx.x == 0) {
    log_scale[r] = log(sum);
    loglike[r] += log(sum) + offset[r];
  }
}

__global__ void WeightedKernel(const double* __restrict__ b, const double* __restrict__ beta,
                               const double* __restrict__ log_scale, int n, double* __restrict__ weighted) {
  const int r = blockIdx.x;
  const double inverse = exp(-log_scale[r]);
  for (int j = threadIdx.x; j < n; j += kThreads) {
    const int64_t k = int64_t{r} * n + j;
    weighted[k] = b[k] * beta[k] * inverse;
  }
}

__global__ void OnesKernel(double* __restrict__ beta, int n, int first) {
  for (int j = threadIdx.x; j < n; j += kThreads) beta[int64_t{first + blockIdx.x} * n + j] = 1.0;
}

__global__ void GammaKernel(const double* __restrict__ alpha, const double* __restrict__ beta,
                            const int64_t* __restrict__ gamma_base, int64_t t, int n, double* __restrict__ gamma) {
  const int r = blockIdx.x;
  double sum = 0.0;
  for (int j = threadIdx.x; j < n; j += kThreads) sum += alpha[int64_t{r} * n + j] * beta[int64_t{r} * n + j];
  sum = BlockReduce<false>(sum);
  double* out = gamma + gamma_base[r] + t * n;
  const double inverse = sum > 0.0 ? 1.0 / sum : 0.0;
  for (int j = threadIdx.x; j < n; j += kThreads) out[j] = alpha[int64_t{r} * n + j] * beta[int64_t{r} * n + j] * inverse;
}

}  // namespace

void LaunchEmissions(const float* loglikes, const int64_t* row_base, int64_t t, int stride, const int* emissions,
                     int n, int rows, double* b, double* offset, cudaStream_t stream) {
  if (rows > 0) EmissionsKernel<<<rows, kThreads, 0, stream>>>(loglikes, row_base, t, stride, emissions, n, b, offset);
}
void LaunchInitialAlpha(const double* initial, int n, int rows, double* alpha, cudaStream_t stream) {
  if (rows > 0) InitialAlphaKernel<<<rows, kThreads, 0, stream>>>(initial, n, alpha);
}
void LaunchScaleForward(double* alpha, const double* b, const double* offset, int n, int rows, double* log_scale,
                        double* loglike, int* no_path, cudaStream_t stream) {
  if (rows > 0) ScaleForwardKernel<<<rows, kThreads, 0, stream>>>(alpha, b, offset, n, log_scale, loglike, no_path);
}
void LaunchWeighted(const double* b, const double* beta, const double* log_scale, int n, int rows, double* weighted,
                    cudaStream_t stream) {
  if (rows > 0) WeightedKernel<<<rows, kThreads, 0, stream>>>(b, beta, log_scale, n, weighted);
}
void LaunchOnes(double* beta, int n, int first, int last, cudaStream_t stream) {
  if (last > first) OnesKernel<<<last - first, kThreads, 0, stream>>>(beta, n, first);
}
void LaunchGamma(const double* alpha, const double* beta, const int64_t* gamma_base, int64_t t, int n, int rows,
                 double* gamma, cudaStream_t stream) {
  if (rows > 0) GammaKernel<<<rows, kThreads, 0, stream>>>(alpha, beta, gamma_base, t, n, gamma);
}

}  // namespace gmmscore::hmm_cuda
