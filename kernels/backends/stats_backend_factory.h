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
// (UNAVAILABLE without CUDA or a device); "cuda:N,M,..." or "cuda:all":
// those devices (every one that answers), each holding a shard of the frames
// (sharded_stats_backend.h); any of these with "/fp32" or "/tf32x3" names
// the kernels (stats_policy.h; the policy's choice without); "auto": every
// GPU when a device answers, else cpu. INVALID_ARGUMENT for other names.
absl::StatusOr<std::unique_ptr<StatsBackend>> CreateStatsBackend(absl::string_view name);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_BACKENDS_STATS_BACKEND_FACTORY_H_
