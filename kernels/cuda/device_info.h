// What the launchers need to know of a device, read once per device and
// cached: every wgmma launch used to ask for the compute capability and the
// SM count (three driver calls) and to set the kernel's shared-memory limit.
//
//   GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
//   GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(&Kernel<P>), bytes));
//
// Thread safety: thread-safe.
#ifndef GMMSCORE_KERNELS_CUDA_DEVICE_INFO_H_
#define GMMSCORE_KERNELS_CUDA_DEVICE_INFO_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace gmmscore {

struct DeviceInfo {
  int device = 0;
  int major = 0;  // compute capability
  int minor = 0;
  int sms = 0;    // multiprocessors

  // Compute capability 9.0 (H100, H200): the wgmma kernels exist as sm_90a
  // machine code only.
  bool has_wgmma() const { return major == 9 && minor == 0; }
};

// Number of CUDA devices that answer (0 when there is no driver or device).
int CudaDeviceCount();

// The current device's (cudaGetDevice); read from the driver the first time.
absl::StatusOr<DeviceInfo> CurrentDeviceInfo();

// Lets `kernel` use `bytes` of dynamic shared memory on the current device
// (cudaFuncAttributeMaxDynamicSharedMemorySize), calling CUDA only when no
// limit at least as large was set for this kernel on this device before.
absl::Status AllowDynamicSharedMemory(const void* kernel, size_t bytes);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_DEVICE_INFO_H_
