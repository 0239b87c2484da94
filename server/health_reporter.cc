#include "server/health_reporter.h"

#include <utility>

namespace gmmscore {

bool HealthReporter::IsReservedName(absl::string_view name) {
  return name.empty() || name == kScorerService;
}

bool HealthReporter::ReachableLocked(const std::string& model) const {
  return !view_.model_reachable || view_.model_reachable(model);
}

bool HealthReporter::CanServeLocked() const {
  return !view_.server_can_serve || view_.server_can_serve();
}

void HealthReporter::SendLocked(const std::string& name, bool serving) {
  auto [it, added] = reported_.try_emplace(name, serving);
  if (!added && it->second == serving) return;
  it->second = serving;
  service_->SetServingStatus(name, serving);
}

void HealthReporter::ReportAllLocked() {
  for (const auto& [name, served] : models_) {
    SendLocked(name, served && ReachableLocked(name));
  }
  SendLocked(kScorerService, serving_ && CanServeLocked());
  SendLocked("", serving_ && CanServeLocked());
}

void HealthReporter::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || draining_) return;
  serving_ = serving;
  SendLocked("", serving && CanServeLocked());
  SendLocked(kScorerService, serving && CanServeLocked());
}

void HealthReporter::SetModel(const std::string& name, bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || IsReservedName(name) || (serving && draining_)) return;
  models_[name] = serving;
  SendLocked(name, serving && ReachableLocked(name));
  // A load or unload may change whether any healthy device holds a model
  // (the last one on the last healthy device unloaded, or one loaded there):
  // the overall status is judged again, after the model's own entry.
  if (serving_ && !draining_) {
    SendLocked(kScorerService, CanServeLocked());
    SendLocked("", CanServeLocked());
  }
}

void HealthReporter::SetDeviceHealth(DeviceHealthView view) {
  absl::MutexLock lock(&mu_);
  view_ = std::move(view);
  if (service_ != nullptr && !draining_) ReportAllLocked();
}

void HealthReporter::Refresh() {
  absl::MutexLock lock(&mu_);
  if (service_ != nullptr && !draining_) ReportAllLocked();
}

void HealthReporter::BeginDrain() {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || draining_) return;
  draining_ = true;
  // Models first: the overall status is the one watchers and load balancers
  // act on, so by the time it says NOT_SERVING every model already does.
  for (const auto& [name, served] : models_) SendLocked(name, false);
  SendLocked(kScorerService, false);
  SendLocked("", false);
}

void HealthReporter::Shutdown() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  if (service_ != nullptr) service_->Shutdown();
}

}  // namespace gmmscore
