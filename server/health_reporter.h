// HealthReporter: what gmmscored says on the standard gRPC health service
// (grpc.health.v1.Health, gRPC's built-in implementation): the overall status
// (service "") and that of gmmscore.v1.AcousticScorer, plus one entry per
// model, named by the model.
//
//   SERVING       started, models loaded; a model: served
//   NOT_SERVING   draining or stopped; a model: being loaded under a new
//                 name, or unloaded
//   NOT_FOUND     (Check) / SERVICE_UNKNOWN (Watch): never served
//
//   HealthReporter health(server->GetHealthCheckService());
//   health.SetModel("spk1", true);
//   health.Shutdown();   // on drain: everything NOT_SERVING, for good
//
// Thread safety: all methods are thread-safe (gRPC's service locks).
#ifndef GMMSCORE_SERVER_HEALTH_REPORTER_H_
#define GMMSCORE_SERVER_HEALTH_REPORTER_H_

#include <string>

#include "grpcpp/health_check_service_interface.h"

namespace gmmscore {

class HealthReporter {
 public:
  // The scoring service's name on the health service.
  static constexpr char kScorerService[] = "gmmscore.v1.AcousticScorer";

  // `service` is the server's (GetHealthCheckService()); null: reports
  // nothing (health service disabled).
  explicit HealthReporter(grpc::HealthCheckServiceInterface* service) : service_(service) {}

  // "" and kScorerService.
  void SetServing(bool serving);
  void SetModel(const std::string& name, bool serving);
  // Everything NOT_SERVING; later changes are ignored. Idempotent.
  void Shutdown();

 private:
  grpc::HealthCheckServiceInterface* const service_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_HEALTH_REPORTER_H_
