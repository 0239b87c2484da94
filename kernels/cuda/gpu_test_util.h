// For GPU tests: skip, rather than fail, where no CUDA device answers (CI
// builds and runs them on machines without a GPU).
//
//   TEST(MyKernelTest, MatchesReference) {
//     SKIP_WITHOUT_GPU();
//     ...
//   }
#ifndef GMMSCORE_KERNELS_CUDA_GPU_TEST_UTIL_H_
#define GMMSCORE_KERNELS_CUDA_GPU_TEST_UTIL_H_

#include "gtest/gtest.h"
#include "kernels/cuda/device_info.h"

#define SKIP_WITHOUT_GPU() \
  if (::gmmscore::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

#endif  // GMMSCORE_KERNELS_CUDA_GPU_TEST_UTIL_H_
