// Launchers of the dense-HMM recursion kernels (hmm_kernels.cu): one CTA per
// utterance row of a frame, rows in the batch's length order. Internal to
// forward_backward_cuda.cc.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_HMM_KERNELS_H_
#define GMMSCORE_KERNELS_HMM_CUDA_HMM_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace gmmscore::hmm_cuda {

// b[r][j] = exp(ll[r][emission[j]] - max_j), offset[r] = that max (0 when
// every emission is -inf), where ll[r] = loglikes + row_base[r] + t * stride.
void LaunchEmissions(const float* loglikes, const int64_t* row_base, int64_t t, int stride, const int* emissions,
                     int n, int rows, double* b, double* offset, cudaStream_t stream);
// alpha[r] = initial (frame 0).
void LaunchInitialAlpha(const double* initial, int n, int rows, double* alpha, cudaStream_t stream);
// alpha[r] *= b[r]; s = sum; alpha[r] /= s; log_scale[r] = log s;
// loglike[r] += log s + offset[r]; rows with s <= 0 (no path) lower
// no_path[0] to their index (start it at INT_MAX).
void LaunchScaleForward(double* alpha, const double* b, const double* offset, int n, int rows, double* log_scale,
                        double* loglike, int* no_path, cudaStream_t stream);
// weighted[r] = b[r] * beta[r] / exp(log_scale[r]).
void LaunchWeighted(const double* b, const double* beta, const double* log_scale, int n, int rows, double* weighted,
                    cudaStream_t stream);
// beta rows [first, last) = 1.
void LaunchOnes(double* beta, int n, int first, int last, cudaStream_t stream);
// gamma[gamma_base[r] + t * n + j] = alpha[r][j] beta[r][j] / sum_j (...).
void LaunchGamma(const double* alpha, const double* beta, const int64_t* gamma_base, int64_t t, int n, int rows,
                 double* gamma, cudaStream_t stream);

}  // namespace gmmscore::hmm_cuda

#endif  // GMMSCORE_KERNELS_HMM_CUDA_HMM_KERNELS_H_
