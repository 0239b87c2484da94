#include "server/health_reporter.h"

namespace gmmscore {

void HealthReporter::SetServing(bool serving) {
  if (service_ == nullptr) return;
  service_->SetServingStatus("", serving);
  service_->SetServingStatus(kScorerService, serving);
}

void HealthReporter::SetModel(const std::string& name, bool serving) {
  if (service_ != nullptr) service_->SetServingStatus(name, serving);
}

void HealthReporter::Shutdown() {
  if (service_ != nullptr) service_->Shutdown();
}

}  // namespace gmmscore
