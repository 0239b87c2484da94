#include "server/health_reporter.h"

#include <utility>

namespace gmmscore {

bool HealthReporter::IsReservedName(absl::string_view name) {
  return name.empty() || name == kScorerService;
}

bool HealthReporter::ReachableLocked(const std::string& model) const {
  return !view_.model_reachable || view_.model_reachable(model);
}

void HealthReporter::ReportAllLocked() {
  const bool any_device = !view_.any_device_healthy || view_.any_device_healthy();
  for (const auto& [name, served] : models_) {
    service_->SetServingStatus(name, served && ReachableLocked(name));
  }
  service_->SetServingStatus(kScorerService, serving_ && any_device);
  service_->SetServingStatus("", serving_ && any_device);
}

void HealthReporter::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || draining_) return;
  serving_ = serving;
  const bool any_device = !view_.any_device_healthy || view_.any_device_healthy();
  service_->SetServingStatus("", serving && any_device);
  service_->SetServingStatus(kScorerService, serving && any_device);
}

void HealthReporter::SetModel(const std::string& name, bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || IsReservedName(name) || (serving && draining_)) return;
  models_[name] = serving;
  service_->SetServingStatus(name, serving && ReachableLocked(name));
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
  for (const auto& [name, served] : models_) service_->SetServingStatus(name, false);
  service_->SetServingStatus(kScorerService, false);
  service_->SetServingStatus("", false);
}

void HealthReporter::Shutdown() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  if (service_ != nullptr) service_->Shutdown();
}

}  // namespace gmmscore
