#include "kernels/backends/stats_backend_factory.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/train/cpu_stats_backend.h"
#include "kernels/train/stats_reference.h"
#ifdef GMMSCORE_HAVE_TRAIN_CUDA
#include "kernels/train/cuda/cuda_stats_backend.h"
#endif

namespace gmmscore {

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateStatsBackend(absl::string_view name) {
  if (name == "cpu") return CreateCpuStatsBackend();
  if (name == "reference") return CreateReferenceStatsBackend();
  if (name == "auto") return CudaDeviceAvailable() ? CreateStatsBackend("cuda:0") : CreateCpuStatsBackend();
  if (name == "cuda" || absl::StartsWith(name, "cuda:") || absl::StartsWith(name, "cuda/")) {
    // cuda[:N][/fp32|/tf32x3]: the device, then the kernels (stats_policy.h).
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
    int device = 0;
    if (device_part != "cuda" && !absl::SimpleAtoi(device_part.substr(5), &device)) {
      return absl::InvalidArgumentError(absl::StrCat("bad device in backend '", name, "'"));
    }
#ifdef GMMSCORE_HAVE_TRAIN_CUDA
    CudaStatsOptions options;
    if (kernel_part == "tf32x3") options.kernel = train_cuda::StatsKernelChoice::kTf32x3;
    if (kernel_part == "fp32") options.kernel = train_cuda::StatsKernelChoice::kFp32;
    return CreateCudaStatsBackend(device, options);
#else
    return absl::UnavailableError("this build has no CUDA statistics backend");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "' (expected auto, cpu, reference, cuda, cuda:N or cuda[:N]/fp32|tf32x3)"));
}

}  // namespace gmmscore
