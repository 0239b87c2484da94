// Turns CUDA runtime and cuBLAS errors into absl::Status at the one place a
// call is made.
//
//   GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(...), "copy features to device");
//   GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fused kernel");
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_CHECK_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

// OK for cudaSuccess; RESOURCE_EXHAUSTED for out-of-memory; UNAVAILABLE when
// no device or driver answers; INTERNAL otherwise. The message names `what`
// and CUDA's own error text. Clears CUDA's sticky last error where it can.
absl::Status CudaStatus(cudaError_t error, absl::string_view what);
absl::Status CublasStatus(cublasStatus_t status, absl::string_view what);

}  // namespace gmmscore

#define GMM_CUDA_RETURN_IF_ERROR(call, what)                              \
  do {                                                                    \
    ::absl::Status gmm_cuda_status_ = ::gmmscore::CudaStatus((call), what); \
    if (!gmm_cuda_status_.ok()) return gmm_cuda_status_;                  \
  } while (0)

#define GMM_CUBLAS_RETURN_IF_ERROR(call, what)                                \
  do {                                                                        \
    ::absl::Status gmm_cublas_status_ = ::gmmscore::CublasStatus((call), what); \
    if (!gmm_cublas_status_.ok()) return gmm_cublas_status_;                  \
  } while (0)

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_CHECK_H_
