#include "kernels/backends/align_engine_factory.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/backends/backend_factory.h"
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
#include "kernels/hmm/cuda/device_align_engine.h"
#endif

namespace gmmscore {

absl::StatusOr<AlignEngineFactory> AlignEngineFor(absl::string_view name) {
  if (name == "cpu") return AlignEngineFactory();
  if (name == "auto") return CudaDeviceAvailable() ? AlignEngineFor("cuda:0") : AlignEngineFactory();
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    int device = 0;
    if (name != "cuda" && !absl::SimpleAtoi(name.substr(5), &device)) {
      return absl::InvalidArgumentError(absl::StrCat("bad device in backend '", name, "'"));
    }
#ifdef GMMSCORE_HAVE_ALIGN_CUDA
    return CudaAlignEngineFactory(device);
#else
    return absl::UnavailableError("this build has no CUDA aligner");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", name, "' (expected auto, cpu, cuda or cuda:N)"));
}

}  // namespace gmmscore
