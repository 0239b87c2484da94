#include "server/gpu_monitor.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

// The few NVML types used, declared here (the layouts of nvml.h, stable
// since NVML's first release) so that no NVML header is needed to build.
using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS is 0
constexpr NvmlReturn kNvmlSuccess = 0;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

}  // namespace

struct GpuMonitor::Api {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  NvmlReturn (*device_by_index)(unsigned int, void**);
  NvmlReturn (*memory_info)(void*, NvmlMemory*);
  NvmlReturn (*utilization)(void*, NvmlUtilization*);
  NvmlReturn (*uuid)(void*, char*, unsigned int);
  NvmlReturn (*name)(void*, char*, unsigned int);
};

namespace {

// nvmlDeviceGetUUID / GetName into a string ("" if NVML fails: the
// identity labels are then empty rather than the monitor absent).
std::string ReadDeviceText(NvmlReturn (*get)(void*, char*, unsigned int), void* device) {
  char text[96] = {};  // NVML's UUID buffer size is 80, its name's 96
  if (get(device, text, sizeof(text)) != kNvmlSuccess) return "";
  text[sizeof(text) - 1] = '\0';
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuMonitor>> GpuMonitor::Open(int index,
                                                             const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::NotFoundError(absl::StrFormat("cannot load %s: %s", library, dlerror()));
  }
  auto api = std::make_unique<Api>();
  bool complete = true;
  auto resolve = [&](auto* function, const char* name) {
    *function = reinterpret_cast<std::remove_pointer_t<decltype(function)>>(dlsym(handle, name));
    complete = complete && *function != nullptr;
  };
  resolve(&api->init, "nvmlInit_v2");
  resolve(&api->shutdown, "nvmlShutdown");
  resolve(&api->device_by_index, "nvmlDeviceGetHandleByIndex_v2");
  resolve(&api->memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(&api->utilization, "nvmlDeviceGetUtilizationRates");
  resolve(&api->uuid, "nvmlDeviceGetUUID");
  resolve(&api->name, "nvmlDeviceGetName");
  if (!complete) {
    dlclose(handle);
    return absl::NotFoundError(absl::StrFormat("%s lacks an NVML function gmmscored uses", library));
  }
  if (NvmlReturn code = api->init(); code != kNvmlSuccess) {
    dlclose(handle);
    return absl::UnavailableError(absl::StrFormat("nvmlInit failed (NVML error %d)", code));
  }
  void* device = nullptr;
  if (NvmlReturn code = api->device_by_index(index, &device); code != kNvmlSuccess) {
    api->shutdown();
    dlclose(handle);
    return absl::UnavailableError(
        absl::StrFormat("NVML has no GPU %d (NVML error %d)", index, code));
  }
  std::string uuid = ReadDeviceText(api->uuid, device);
  std::string name = ReadDeviceText(api->name, device);
  return std::unique_ptr<GpuMonitor>(
      new GpuMonitor(handle, std::move(api), device, index, std::move(uuid), std::move(name)));
}

GpuMonitor::GpuMonitor(void* handle, std::unique_ptr<Api> api, void* device, int index, std::string uuid,
                       std::string name)
    : handle_(handle),
      api_(std::move(api)),
      device_(device),
      index_(index),
      uuid_(std::move(uuid)),
      name_(std::move(name)) {}

GpuMonitor::~GpuMonitor() {
  api_->shutdown();
  dlclose(handle_);
}

absl::StatusOr<GpuSample> GpuMonitor::Read() const {
  NvmlMemory memory{};
  if (NvmlReturn code = api_->memory_info(device_, &memory); code != kNvmlSuccess) {
    return absl::UnavailableError(
        absl::StrFormat("nvmlDeviceGetMemoryInfo failed (NVML error %d)", code));
  }
  NvmlUtilization utilization{};
  if (NvmlReturn code = api_->utilization(device_, &utilization); code != kNvmlSuccess) {
    return absl::UnavailableError(
        absl::StrFormat("nvmlDeviceGetUtilizationRates failed (NVML error %d)", code));
  }
  return GpuSample{.memory_used_bytes = memory.used,
                   .memory_total_bytes = memory.total,
                   .gpu_utilization_percent = utilization.gpu,
                   .memory_utilization_percent = utilization.memory};
}

}  // namespace gmmscore
