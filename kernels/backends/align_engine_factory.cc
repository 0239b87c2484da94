#include "kernels/backends/align_engine_factory.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/core/status_macros.h"
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
#include "kernels/hmm/cuda/device_align_engine.h"
#include "kernels/hmm/cuda/graph_posteriors_batch.h"
#endif

namespace gmmscore {

namespace {

// The GPU a backend name asks for: nullopt for the CPU, an error for a bad name.
absl::StatusOr<std::optional<int>> DeviceOf(absl::string_view name) {
  if (name == "cpu") return std::nullopt;
  if (name == "auto") return CudaDeviceAvailable() ? std::optional<int>(0) : std::nullopt;
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    int device = 0;
    if (name != "cuda" && !absl::SimpleAtoi(name.substr(5), &device)) {
      return absl::InvalidArgumentError(absl::StrCat("bad device in backend '", name, "'"));
    }
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
    return device;
#else
    return absl::UnavailableError("this build has no CUDA aligner");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", name, "' (expected auto, cpu, cuda or cuda:N)"));
}

}  // namespace

absl::StatusOr<AlignEngineFactory> AlignEngineFor(absl::string_view name) {
  GMM_ASSIGN_OR_RETURN(const std::optional<int> device, DeviceOf(name));
  if (!device) return AlignEngineFactory();
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
  return CudaAlignEngineFactory(*device);
#else
  return AlignEngineFactory();  // not reached: DeviceOf refused
#endif
}

absl::StatusOr<GraphPosteriorsBatch> ForwardBackwardFor(absl::string_view name) {
  GMM_ASSIGN_OR_RETURN(const std::optional<int> device, DeviceOf(name));
  if (!device) return GraphPosteriorsBatch();
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
  return CudaGraphPosteriors(*device);
#else
  return GraphPosteriorsBatch();
#endif
}

}  // namespace gmmscore
