#include "server/device_prober.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

absl::Status ProbeDevice(ScoringBackend& backend, const ModelRepository& repository, int device) {
  std::shared_ptr<const PreparedModel> smallest;
  for (const ServedModel& model : repository.models()) {
    std::shared_ptr<const PreparedModel> replica = model.replica(device);
    if (replica == nullptr) continue;
    if (smallest == nullptr || replica->gaussians_per_frame() < smallest->gaussians_per_frame()) {
      smallest = std::move(replica);
    }
  }
  if (smallest == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no model is placed on device %d to probe it with", device));
  }
  const FloatMatrix zeros(1, smallest->dim(), 0.0f);
  ScoreResult result;
  return backend.Score(*smallest, zeros.view(), ScoreOptions{}, &result);
}

DeviceProber::DeviceProber(DeviceRouter* router, Probe probe, absl::Duration interval)
    : router_(router), probe_(std::move(probe)), ticker_("gs-probe", interval, [this] { ProbeFailing(); }) {}

DeviceProber::~DeviceProber() { Stop(); }

void DeviceProber::ProbeFailing() {
  const std::vector<int> failing = router_->FailingDevices();
  for (int device : failing) router_->ObserveBackend(device, probe_(device));
  probes_.fetch_add(static_cast<int64_t>(failing.size()), std::memory_order_relaxed);
}

}  // namespace gmmscore
