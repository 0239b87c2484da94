#include "server/health_reporter.h"

namespace gmmscore {

bool HealthReporter::IsReservedName(absl::string_view name) {
  return name.empty() || name == kScorerService;
}

void HealthReporter::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || draining_) return;
  service_->SetServingStatus("", serving);
  service_->SetServingStatus(kScorerService, serving);
}

void HealthReporter::SetModel(const std::string& name, bool serving) {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || IsReservedName(name) || (serving && draining_)) return;
  models_.insert(name);
  service_->SetServingStatus(name, serving);
}

void HealthReporter::BeginDrain() {
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr || draining_) return;
  draining_ = true;
  // Models first: the overall status is the one watchers and load balancers
  // act on, so by the time it says NOT_SERVING every model already does.
  for (const std::string& name : models_) service_->SetServingStatus(name, false);
  service_->SetServingStatus(kScorerService, false);
  service_->SetServingStatus("", false);
}

void HealthReporter::Shutdown() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  if (service_ != nullptr) service_->Shutdown();
}

}  // namespace gmmscore
