// A StatsBackend over several others, one per GPU (or CPU backends in
// tests): the frames of a block are cut into contiguous shards, one per
// backend, each backend accumulates its shard's pairs on its own thread, and
// the shards' statistics are added in shard order. The result does not
// depend on how the backends' threads interleave, and differs from one
// backend's only by float rounding (the sums group differently).
//
//   std::vector<std::unique_ptr<StatsBackend>> gpus = ...;  // e.g. cuda:0, cuda:1
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> all, CreateShardedStatsBackend(std::move(gpus)));
//   ... then as any StatsBackend (stats_backend.h).
//
// Shards: block rows [k * ceil(T / K), (k + 1) * ceil(T / K)) go to backend
// k (fewer than K shards when T < K); a pair goes to the shard of its frame.
//
// Errors: as StatsBackend; the request is checked as a whole before any
// shard runs (the same INVALID_ARGUMENT as one backend would give), and a
// shard's failure (the first in shard order) is returned with nothing added
// to `stats`. INVALID_ARGUMENT from CreateShardedStatsBackend without
// backends, and from Accumulate for a block this backend did not load.
//
// Thread safety: one thread at a time (StatsBackend); each inner backend is
// called from one thread at a time.
#ifndef GMMSCORE_KERNELS_TRAIN_SHARDED_STATS_BACKEND_H_
#define GMMSCORE_KERNELS_TRAIN_SHARDED_STATS_BACKEND_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateShardedStatsBackend(
    std::vector<std::unique_ptr<StatsBackend>> backends);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_SHARDED_STATS_BACKEND_H_
