// Creates a scoring backend by name, so binaries need not know which
// backends this build has.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> backend, CreateBackend("auto"));
#ifndef GMMSCORE_KERNELS_BACKENDS_BACKEND_FACTORY_H_
#define GMMSCORE_KERNELS_BACKENDS_BACKEND_FACTORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// "cpu": the multi-threaded float32 CPU backend.
// "cuda" or "cuda:N": the CUDA backend on device N (default 0); UNAVAILABLE
//   when this build has no CUDA or no device is present.
// "auto": cuda:0 when a device is present, otherwise cpu.
// INVALID_ARGUMENT for any other name.
struct BackendOptions {
  // CUDA backends: CudaBackendOptions::pinned_scores_bytes.
  int64_t cuda_pinned_scores_bytes = int64_t{1} << 30;
  // CudaBackendOptions::pinned_scores_at_start.
  bool cuda_pinned_scores_at_start = false;
};
absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateBackend(absl::string_view name,
                                                             const BackendOptions& options = {});

// True when this build has the CUDA backend and at least one device answers.
bool CudaDeviceAvailable();
// How many CUDA devices answer; 0 without the CUDA backend.
int CudaDevicesPresent();

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_BACKENDS_BACKEND_FACTORY_H_
