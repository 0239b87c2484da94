// Readies each device a served model is placed on for the daemon's batches
// of it before they come (ScoringBackend::WarmUp): a CUDA backend's lanes
// grow their buffers and load their kernels at their first calls of a size,
// which under load stalled whole batches (docs/PERFORMANCE.md, stop 56).
//
//   GMM_RETURN_IF_ERROR(WarmServedModel(served, backends, /*frames=*/4096));
#ifndef GMMSCORE_SERVER_MODEL_WARM_UP_H_
#define GMMSCORE_SERVER_MODEL_WARM_UP_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/score/scoring_backend.h"
#include "server/model_repository.h"

namespace gmmscore {

// Warms backends[d] with model.replicas[d] for every replica whose backend
// warms_up(), to calls of
// model.max_batch_frames frames (its own cap), or `frames` where it has
// none, at its precision, every device at once (a thread each); logs one
// line each with the time it took. The first device's error, prefixed with
// the device and what failed (a lane that cannot hold a full batch fails at
// load, not under load).
absl::Status WarmServedModel(const ServedModel& model, const std::vector<ScoringBackend*>& backends,
                             int64_t frames);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MODEL_WARM_UP_H_
