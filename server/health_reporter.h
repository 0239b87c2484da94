// HealthReporter: what gmmscored says on the standard gRPC health service
// (grpc.health.v1.Health, gRPC's built-in implementation): the overall status
// (service "") and that of gmmscore.v1.AcousticScorer, plus one entry per
// model, named by the model.
//
//   SERVING       started, models loaded; a model: served on a device
//                 that can serve (several devices: see SetDeviceHealth)
//   NOT_SERVING   draining or stopped; every device failing; a model:
//                 unloaded, or every device it is placed on failing
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

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
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

  // Whether a served model, and the server, can serve now: a model whose
  // every replica is on a failing device cannot (DeviceRouter), and neither
  // can a server none of whose healthy devices holds a model.
  struct DeviceHealthView {
    std::function<bool(const std::string& model)> model_reachable;
    std::function<bool()> server_can_serve;
  };

  // "" and kScorerService (SERVING only while some device can serve).
  // Ignored after BeginDrain.
  void SetServing(bool serving);
  // A served model's entry (SERVING only while it is reachable); ignored
  // for reserved names, and for serving = true after BeginDrain. Once
  // started (SetServing(true)) the overall status is judged again too: a
  // load or unload can change whether a healthy device holds a model.
  void SetModel(const std::string& name, bool serving);
  // Installs the device view (before it, everything is reachable) and
  // reports every entry anew by it.
  void SetDeviceHealth(DeviceHealthView view);
  // Reports every entry anew, after a device turned failing or healthy.
  void Refresh();
  // Every model entry NOT_SERVING, then "" and kScorerService; later
  // changes to SERVING are ignored. Idempotent.
  void BeginDrain();
  // gRPC's end state: everything NOT_SERVING, later changes ignored by
  // gRPC itself. Idempotent.
  void Shutdown();

 private:
  grpc::HealthCheckServiceInterface* const service_;
  absl::Mutex mu_;
  // Sets `name`'s status on the service unless it already reads so
  // (watchers get one update per change, not one per Refresh).
  void SendLocked(const std::string& name, bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends every entry's status: served (and the server started) and
  // reachable by view_.
  void ReportAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ReachableLocked(const std::string& model) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CanServeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  // Every model name given an entry (served now or once), with whether it
  // is served: bounded by the models ever served, since failed loads never
  // get here.
  absl::btree_map<std::string, bool> models_ ABSL_GUARDED_BY(mu_);
  DeviceHealthView view_ ABSL_GUARDED_BY(mu_);
  // What the service was last told, per name (models, "" and the scorer).
  absl::btree_map<std::string, bool> reported_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_HEALTH_REPORTER_H_
