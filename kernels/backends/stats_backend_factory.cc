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
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    int device = 0;
    if (name != "cuda" && !absl::SimpleAtoi(name.substr(5), &device)) {
      return absl::InvalidArgumentError(absl::StrCat("bad device in backend '", name, "'"));
    }
#ifdef GMMSCORE_HAVE_TRAIN_CUDA
    return CreateCudaStatsBackend(device);
#else
    return absl::UnavailableError("this build has no CUDA statistics backend");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "' (expected auto, cpu, reference, cuda or cuda:N)"));
}

}  // namespace gmmscore
