#include "kernels/cuda/device_info.h"

#include <cuda_runtime.h>

#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {
namespace {

struct Cache {
  std::mutex mu;
  absl::flat_hash_map<int, DeviceInfo> devices;
  // (kernel, device) -> the largest dynamic shared memory allowed so far.
  absl::flat_hash_map<std::pair<const void*, int>, size_t> shared_bytes;
};

Cache& TheCache() {
  static Cache* cache = new Cache();  // never destroyed: used until exit
  return *cache;
}

absl::Status ReadDeviceInfo(int device, DeviceInfo* info) {
  info->device = device;
  GMM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&info->major, cudaDevAttrComputeCapabilityMajor, device),
      "compute capability");
  GMM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&info->minor, cudaDevAttrComputeCapabilityMinor, device),
      "compute capability");
  GMM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&info->sms, cudaDevAttrMultiProcessorCount, device),
      "multiprocessor count");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceInfo> CurrentDeviceInfo() {
  int device = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "get device");
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  if (auto it = cache.devices.find(device); it != cache.devices.end()) return it->second;
  DeviceInfo info;
  if (absl::Status read = ReadDeviceInfo(device, &info); !read.ok()) return read;
  cache.devices.emplace(device, info);
  return info;
}

absl::Status AllowDynamicSharedMemory(const void* kernel, size_t bytes) {
  int device = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "get device");
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  size_t& allowed = cache.shared_bytes[{kernel, device}];
  if (bytes <= allowed) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(bytes)),
                           "raise a kernel's dynamic shared memory");
  allowed = bytes;
  return absl::OkStatus();
}

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace gmmscore
