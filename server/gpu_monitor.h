// GpuMonitor: memory and utilisation of the GPU a daemon scores on, read
// through NVML for /metrics. NVML (libnvidia-ml.so.1, part of the NVIDIA
// driver) is opened with dlopen when the monitor is made, so gmmscored has
// no link-time dependency on it and runs where it is absent (CPU machines,
// containers without the driver's libraries): there the monitor cannot be
// made and the GPU gauges are simply not exported.
//
//   absl::StatusOr<std::unique_ptr<GpuMonitor>> gpu = GpuMonitor::Open(0);
//   if (gpu.ok()) { absl::StatusOr<GpuSample> now = (*gpu)->Read(); ... }
//
// The device is NVML's index, which is CUDA's unless CUDA_VISIBLE_DEVICES or
// CUDA_DEVICE_ORDER reorders devices (one GPU per container, the deployment
// in deploy/, is index 0 for both).
//
// Thread safety: Read() may be called from several threads (NVML is
// thread-safe).
#ifndef GMMSCORE_SERVER_GPU_MONITOR_H_
#define GMMSCORE_SERVER_GPU_MONITOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gmmscore {

struct GpuSample {
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
  // Percent of NVML's last sample period (1/6 s to 1 s) in which a kernel
  // ran / device memory was read or written.
  unsigned gpu_utilization_percent = 0;
  unsigned memory_utilization_percent = 0;
};

class GpuMonitor {
 public:
  // Opens `library` (dlopen), initialises NVML and finds device `index`.
  // NOT_FOUND when the library cannot be loaded or lacks a function;
  // UNAVAILABLE when NVML fails to start or has no such device.
  static absl::StatusOr<std::unique_ptr<GpuMonitor>> Open(
      int index, const std::string& library = "libnvidia-ml.so.1");
  // Shuts NVML down and unloads the library.
  ~GpuMonitor();

  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // The device now. UNAVAILABLE naming the NVML call that failed.
  absl::StatusOr<GpuSample> Read() const;
  int index() const { return index_; }
  // Read once at Open: the device's identity, stable across reboots and
  // renumbering ("GPU-8f3c..."), and its product name; "" if NVML failed.
  const std::string& uuid() const { return uuid_; }
  const std::string& name() const { return name_; }

 private:
  struct Api;  // the NVML functions used, resolved with dlsym
  GpuMonitor(void* handle, std::unique_ptr<Api> api, void* device, int index, std::string uuid,
             std::string name);

  void* const handle_;  // dlopen's
  const std::unique_ptr<Api> api_;
  void* const device_;  // nvmlDevice_t
  const int index_;
  const std::string uuid_;
  const std::string name_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_GPU_MONITOR_H_
