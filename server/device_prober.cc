#include "server/device_prober.h"

#include <memory>
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
    : router_(router), probe_(std::move(probe)), interval_(interval) {
  if (interval > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
}

DeviceProber::~DeviceProber() { Stop(); }

void DeviceProber::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock join_lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

int64_t DeviceProber::probes() const {
  absl::MutexLock lock(&mu_);
  return probes_;
}

void DeviceProber::Loop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) {
    // Probed without mu_: a probe runs backend work, and Stop must not wait
    // for the lock behind it.
    mu_.Unlock();
    const std::vector<int> failing = router_->FailingDevices();
    for (int device : failing) router_->ObserveBackend(device, probe_(device));
    mu_.Lock();
    probes_ += static_cast<int64_t>(failing.size());
  }
}

}  // namespace gmmscore
