#include "kernels/backends/stats_backend_factory.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/cpu_stats_backend.h"
#include "kernels/train/sharded_stats_backend.h"
#include "kernels/train/stats_reference.h"
#ifdef GMMSCORE_HAVE_TRAIN_CUDA
#include "kernels/cuda/device_info.h"
#include "kernels/train/cuda/cuda_stats_backend.h"
#endif

namespace gmmscore {
namespace {

// The devices of "cuda", "cuda:N", "cuda:N,M,..." or "cuda:all" (an empty
// list for "all": every device that answers).
absl::StatusOr<std::vector<int>> ParseDevices(absl::string_view device_part, absl::string_view name) {
  if (device_part == "cuda") return std::vector<int>{0};
  if (device_part == "cuda:all") return std::vector<int>{};
  std::vector<int> devices;
  for (absl::string_view text : absl::StrSplit(device_part.substr(5), ',')) {
    int device = 0;
    if (!absl::SimpleAtoi(text, &device) || device < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad device in backend '", name, "'"));
    }
    for (int seen : devices) {
      if (seen == device) return absl::InvalidArgumentError(absl::StrCat("device ", device, " twice in '", name, "'"));
    }
    devices.push_back(device);
  }
  return devices;
}

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateCuda(std::vector<int> devices, absl::string_view kernel_part) {
#ifdef GMMSCORE_HAVE_TRAIN_CUDA
  if (devices.empty()) {  // "all"
    for (int d = 0; d < CudaDeviceCount(); ++d) devices.push_back(d);
    if (devices.empty()) return absl::UnavailableError("no CUDA device answers");
  }
  CudaStatsOptions options;
  if (kernel_part == "tf32x3") options.kernel = train_cuda::StatsKernelChoice::kTf32x3;
  if (kernel_part == "fp32") options.kernel = train_cuda::StatsKernelChoice::kFp32;
  if (devices.size() == 1) return CreateCudaStatsBackend(devices[0], options);
  // Several GPUs: each takes a shard of every block (sharded_stats_backend.h).
  std::vector<std::unique_ptr<StatsBackend>> backends;
  for (int device : devices) {
    GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> backend, CreateCudaStatsBackend(device, options));
    backends.push_back(std::move(backend));
  }
  return CreateShardedStatsBackend(std::move(backends));
#else
  (void)devices;
  (void)kernel_part;
  return absl::UnavailableError("this build has no CUDA statistics backend");
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateStatsBackend(absl::string_view name) {
  if (name == "cpu") return CreateCpuStatsBackend();
  if (name == "reference") return CreateReferenceStatsBackend();
  if (name == "auto") return CudaDeviceAvailable() ? CreateStatsBackend("cuda:all") : CreateCpuStatsBackend();
  if (name == "cuda" || absl::StartsWith(name, "cuda:") || absl::StartsWith(name, "cuda/")) {
    // cuda[:N|:N,M,...|:all][/fp32|/tf32x3]: the devices, then the kernels (stats_policy.h).
    absl::string_view device_part = name, kernel_part;
    const size_t slash = name.find('/');
    if (slash != absl::string_view::npos) {
      device_part = name.substr(0, slash);
      kernel_part = name.substr(slash + 1);
      if (kernel_part != "fp32" && kernel_part != "tf32x3") {
        return absl::InvalidArgumentError(absl::StrCat("unknown CUDA statistics kernels '", kernel_part,
                                                       "' in backend '", name, "' (fp32 or tf32x3)"));
      }
    }
    GMM_ASSIGN_OR_RETURN(std::vector<int> devices, ParseDevices(device_part, name));
    return CreateCuda(std::move(devices), kernel_part);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", name,
                                                 "' (expected auto, cpu, reference, cuda, cuda:N, cuda:N,M,..., "
                                                 "cuda:all, each optionally /fp32 or /tf32x3)"));
}

}  // namespace gmmscore
