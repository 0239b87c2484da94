// RAII owners for CUDA resources: device and pinned host buffers, streams,
// events and cuBLAS handles. Move-only; each frees what it owns exactly once.
//
//   GMM_ASSIGN_OR_RETURN(auto buffer, DeviceBuffer<float>::Allocate(n));
//   GMM_RETURN_IF_ERROR(buffer.CopyFromHost(host.data(), n, stream));
#ifndef GMMSCORE_KERNELS_CUDA_DEVICE_BUFFER_H_
#define GMMSCORE_KERNELS_CUDA_DEVICE_BUFFER_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {

// `count` elements of T in device memory (uninitialised).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(size_t count) {
    DeviceBuffer buffer;
    if (count == 0) return buffer;
    void* ptr = nullptr;
    GMM_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, count * sizeof(T)), "allocate device buffer");
    buffer.data_ = static_cast<T*>(ptr);
    buffer.count_ = count;
    return buffer;
  }
  // Allocates and copies `count` elements synchronously from host memory.
  static absl::StatusOr<DeviceBuffer> FromHost(const T* host, size_t count) {
    absl::StatusOr<DeviceBuffer> buffer = Allocate(count);
    if (!buffer.ok() || count == 0) return buffer;
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer->data_, host, count * sizeof(T), cudaMemcpyHostToDevice),
                             "upload to device");
    return buffer;
  }

  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }

  T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

// `count` elements of page-locked host memory, for asynchronous copies.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static absl::StatusOr<PinnedBuffer> Allocate(size_t count) {
    PinnedBuffer buffer;
    if (count == 0) return buffer;
    void* ptr = nullptr;
    GMM_CUDA_RETURN_IF_ERROR(cudaMallocHost(&ptr, count * sizeof(T)), "allocate pinned buffer");
    buffer.data_ = static_cast<T*>(ptr);
    buffer.count_ = count;
    return buffer;
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }

  T* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

// Grows a buffer to at least `count` elements, dropping its contents.
template <typename Buffer>
absl::Status EnsureCapacity(Buffer& buffer, size_t count) {
  if (buffer.size() >= count) return absl::OkStatus();
  buffer = Buffer();  // free first so the peak is not old + new
  absl::StatusOr<Buffer> grown = Buffer::Allocate(count + count / 4);
  if (!grown.ok()) return grown.status();
  buffer = std::move(*grown);
  return absl::OkStatus();
}

// Queues on `stream` the copy of `count` host elements to `device` through
// `pinned` (an asynchronous copy needs page-locked memory), growing both:
// a call's small tables (segments, descriptors). `what` names the copy in
// errors.
template <typename T>
absl::Status StageToDevice(const T* host, size_t count, PinnedBuffer<T>& pinned, DeviceBuffer<T>& device,
                           cudaStream_t stream, const char* what) {
  if (absl::Status grown = EnsureCapacity(pinned, count); !grown.ok()) return grown;
  if (absl::Status grown = EnsureCapacity(device, count); !grown.ok()) return grown;
  std::memcpy(pinned.data(), host, count * sizeof(T));
  GMM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device.data(), pinned.data(), count * sizeof(T), cudaMemcpyHostToDevice, stream), what);
  return absl::OkStatus();
}

// Move-only owner of one CUDA runtime or cuBLAS handle, released with
// `Destroy` exactly once.
template <typename Handle, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept { std::swap(handle_, other.handle_); }
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() {
    if (handle_ != nullptr) Destroy(handle_);
  }
  Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

// A non-blocking CUDA stream.
class CudaStream : public UniqueHandle<cudaStream_t, &cudaStreamDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
  static absl::StatusOr<CudaStream> Create() {
    cudaStream_t stream = nullptr;
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create CUDA stream");
    return CudaStream(stream);
  }
};

class CudaEvent : public UniqueHandle<cudaEvent_t, &cudaEventDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
  static absl::StatusOr<CudaEvent> Create() {
    cudaEvent_t event = nullptr;
    GMM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event), "create CUDA event");
    return CudaEvent(event);
  }
};

class CublasHandle : public UniqueHandle<cublasHandle_t, &cublasDestroy> {
 public:
  using UniqueHandle::UniqueHandle;
  static absl::StatusOr<CublasHandle> Create() {
    cublasHandle_t handle = nullptr;
    GMM_CUBLAS_RETURN_IF_ERROR(cublasCreate(&handle), "create cuBLAS handle");
    return CublasHandle(handle);
  }
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_DEVICE_BUFFER_H_
