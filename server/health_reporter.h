// HealthReporter: what gmmscored says on the standard gRPC health service
// (grpc.health.v1.Health, gRPC's built-in implementation): the overall status
// (service "") and that of gmmscore.v1.AcousticScorer, plus one entry per
// model, named by the model.
//
//   SERVING       started, models loaded; a model: served
//   NOT_SERVING   draining or stopped; a model: unloaded
//   NOT_FOUND     (Check) / SERVICE_UNKNOWN (Watch): never served
//
//   HealthReporter health(server->GetHealthCheckService());
//   health.SetModel("spk1", true);   // only once "spk1" is served
//   health.BeginDrain();             // models, then overall: NOT_SERVING for good
//   health.Shutdown();               // gRPC's own end state
//
// Rules it keeps (issue 16):
//   - a model entry exists only for a name that was served at some point:
//     callers set it after a successful load, never before, so a failed
//     load leaves no entry (and no memory) behind;
//   - the overall and scorer names are never model entries: SetModel
//     ignores "" and kScorerService (IsReservedName);
//   - on drain every model reads NOT_SERVING before the overall status
//     does, so a reader who sees the overall NOT_SERVING can rely on it for
//     each model too; after BeginDrain nothing turns SERVING again.
//
// Thread safety: all methods are thread-safe; changes are serialised, so
// readers see them in the order made.
#ifndef GMMSCORE_SERVER_HEALTH_REPORTER_H_
#define GMMSCORE_SERVER_HEALTH_REPORTER_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/health_check_service_interface.h"

namespace gmmscore {

class HealthReporter {
 public:
  // The scoring service's name on the health service.
  static constexpr char kScorerService[] = "gmmscore.v1.AcousticScorer";

  // "" and kScorerService: names that are never a model's entry.
  static bool IsReservedName(absl::string_view name);

  // `service` is the server's (GetHealthCheckService()); null: reports
  // nothing (health service disabled).
  explicit HealthReporter(grpc::HealthCheckServiceInterface* service) : service_(service) {}

  // "" and kScorerService. Ignored after BeginDrain.
  void SetServing(bool serving);
  // A served model's entry; ignored for reserved names, and for serving =
  // true after BeginDrain.
  void SetModel(const std::string& name, bool serving);
  // Every model entry NOT_SERVING, then "" and kScorerService; later
  // changes to SERVING are ignored. Idempotent.
  void BeginDrain();
  // gRPC's end state: everything NOT_SERVING, later changes ignored by
  // gRPC itself. Idempotent.
  void Shutdown();

 private:
  grpc::HealthCheckServiceInterface* const service_;
  absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  // Every model name given an entry (served now or once): bounded by the
  // models ever served, since failed loads never get here.
  absl::btree_set<std::string> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_HEALTH_REPORTER_H_
