#include "kernels/backends/backend_factory.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef GMMSCORE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace gmmscore {

bool CudaDeviceAvailable() {
#ifdef GMMSCORE_HAVE_CUDA
  return CudaDeviceCount() > 0;
#else
  return false;
#endif
}

int CudaDevicesPresent() {
#ifdef GMMSCORE_HAVE_CUDA
  return CudaDeviceCount();
#else
  return 0;
#endif
}

absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateBackend(absl::string_view name,
                                                             const BackendOptions& options) {
  if (name == "cpu") return CreateCpuBackend();
  if (name == "auto") {
    return CudaDeviceAvailable() ? CreateBackend("cuda:0", options) : CreateCpuBackend();
  }
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    int device = 0;
    if (name != "cuda" && !absl::SimpleAtoi(name.substr(5), &device)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CUDA device in backend '", name, "'"));
    }
#ifdef GMMSCORE_HAVE_CUDA
    return CreateCudaBackend(device, {.pinned_scores_bytes = options.cuda_pinned_scores_bytes,
                                      .pinned_scores_at_start = options.cuda_pinned_scores_at_start});
#else
    (void)options;
    return absl::UnavailableError("this build of gmmscore has no CUDA backend (built without nvcc)");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "' (expected auto, cpu, cuda or cuda:N)"));
}

}  // namespace gmmscore
