#include "server/model_warm_up.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/core/status_macros.h"
#include "server/log.h"

namespace gmmscore {

absl::Status WarmServedModel(const ServedModel& model, const std::vector<ScoringBackend*>& backends,
                             int64_t frames) {
  const WarmUpShape shape{.frames = model.max_batch_frames > 0 ? model.max_batch_frames : frames,
                          .precision = model.precision};
  for (size_t d = 0; d < model.replicas.size() && d < backends.size(); ++d) {
    if (model.replicas[d] == nullptr || !backends[d]->warms_up()) continue;
    const absl::Time start = absl::Now();
    if (absl::Status warmed = backends[d]->WarmUp(*model.replicas[d], shape); !warmed.ok()) {
      return PrefixStatus(absl::StrCat(backends[d]->name(), ": warming up for batches of ", shape.frames,
                                       " frames of model '", model.name,
                                       "' (--max_batch_frames; --warm_up=false skips it)"),
                          warmed);
    }
    LogInfo("model '%s' warmed on %s for batches of up to %d frames in %s", model.name, backends[d]->name(),
            shape.frames, absl::FormatDuration(absl::Now() - start));
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
