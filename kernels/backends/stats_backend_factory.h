// Creates a GMM statistics backend (kernels/train/stats_backend.h) by name,
// so the training commands need not know which backends this build has.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> backend, CreateStatsBackend("auto"));
#ifndef GMMSCORE_KERNELS_BACKENDS_STATS_BACKEND_FACTORY_H_
#define GMMSCORE_KERNELS_BACKENDS_STATS_BACKEND_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// "cpu": float32 with OpenBLAS on every core; "reference": the float64
// reference (slow); "cuda" or "cuda:N": the CUDA kernels on device N
// (UNAVAILABLE without CUDA or a device), the float32 or tensor-core ones
// as the policy chooses (stats_policy.h), or as named by a suffix:
// "cuda/fp32", "cuda:1/tf32x3"; "auto": cuda:0 when a device answers, else
// cpu. INVALID_ARGUMENT for other names.
absl::StatusOr<std::unique_ptr<StatsBackend>> CreateStatsBackend(absl::string_view name);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_BACKENDS_STATS_BACKEND_FACTORY_H_
