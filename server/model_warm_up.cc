#include "server/model_warm_up.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/core/status_macros.h"
#include "server/log.h"

namespace gmmscore {
namespace {

// One device's warm-up, logged, its error prefixed with what failed.
absl::Status WarmOneDevice(const ServedModel& model, const PreparedModel& replica, ScoringBackend& backend,
                           const WarmUpShape& shape) {
  const absl::Time start = absl::Now();
  if (absl::Status warmed = backend.WarmUp(replica, shape); !warmed.ok()) {
    return PrefixStatus(absl::StrCat(backend.name(), ": warming up for batches of ", shape.frames,
                                     " frames of model '", model.name,
                                     "' (--max_batch_frames; --warm_up=false skips it)"),
                        warmed);
  }
  LogInfo("model '%s' warmed on %s for batches of up to %d frames in %s", model.name, backend.name(), shape.frames,
          absl::FormatDuration(absl::Now() - start));
  return absl::OkStatus();
}

}  // namespace

absl::Status WarmServedModel(const ServedModel& model, const std::vector<ScoringBackend*>& backends,
                             int64_t frames) {
  const WarmUpShape shape{.frames = model.max_batch_frames > 0 ? model.max_batch_frames : frames,
                          .precision = model.precision};
  // The devices at once: each warm-up is a second or more of its own GPU's work.
  std::vector<absl::Status> statuses(backends.size());
  std::vector<std::thread> threads;
  for (size_t d = 0; d < model.replicas.size() && d < backends.size(); ++d) {
    if (model.replicas[d] == nullptr || !backends[d]->warms_up()) continue;
    threads.emplace_back([&, d] { statuses[d] = WarmOneDevice(model, *model.replicas[d], *backends[d], shape); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) GMM_RETURN_IF_ERROR(status);
  return absl::OkStatus();
}

}  // namespace gmmscore
