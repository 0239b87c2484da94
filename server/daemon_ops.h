// DaemonOps: the operations side of a Daemon, kept apart from the scoring
// path: transport credentials (TLS, mutual TLS), the standard health service
// and server reflection, the ModelAdmin service, Prometheus metrics (/metrics
// over HTTP) and the health transitions of a drain.
//
// Daemon::Start calls, in order:
//   GMM_ASSIGN_OR_RETURN(auto ops, DaemonOps::Create(options.ops, repository));  // before the builder
//   builder.AddListeningPort(address, ops->credentials(), &port);
//   ops->ConfigureBuilder(&builder);
//   server = builder.BuildAndStart();
//   GMM_RETURN_IF_ERROR(ops->Started(server.get(), {...sources...}));
// and Daemon::Drain calls ops->BeginDrain() first, ops->Stop() last.
//
// Thread safety: Create/ConfigureBuilder/Started from one thread; after that
// all methods are thread-safe.
#ifndef GMMSCORE_SERVER_DAEMON_OPS_H_
#define GMMSCORE_SERVER_DAEMON_OPS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/admin_service.h"
#include "server/gpu_monitor.h"
#include "server/health_reporter.h"
#include "server/memory_trimmer.h"
#include "server/metrics_http_server.h"
#include "server/model_repository.h"
#include "server/server_metrics.h"
#include "server/tls_credentials.h"

namespace gmmscore {

struct OpsOptions {
  // Transport: plaintext unless a certificate and key are given.
  TlsOptions tls;
  // Bearer token the ModelAdmin service requires. Never logged. Without
  // one, ModelAdmin is closed when the scoring service requires a token
  // (scoring_token_set) unless admin_open, else open (DecideAdminAccess).
  std::string admin_token;
  bool scoring_token_set = false;  // set by Daemon::Start from its limits
  bool admin_open = false;
  // HOST:PORT serving GET /metrics; empty: no metrics endpoint. Port 0
  // picks a free one (metrics_port()).
  std::string metrics_listen;
  // On drain: how long health reports NOT_SERVING while RPCs are still
  // accepted, so that load balancers and Kubernetes stop sending new streams
  // before the port closes.
  absl::Duration drain_grace = absl::ZeroDuration();
  // Gives malloc's free memory back after bursts (memory_trimmer.h);
  // period <= 0: never.
  MemoryTrimmerOptions trim;
  // NVML, for the GPU gauges when the backend is "cuda:N" (opened at
  // runtime; absent: no GPU gauges).
  std::string nvml_library = "libnvidia-ml.so.1";
};

class DaemonOps {
 public:
  // Turns on gRPC's health service and reflection (process-wide settings
  // read when a ServerBuilder is made), reads the TLS files.
  // `repository` must outlive this object. Errors: MakeServerCredentials'.
  static absl::StatusOr<std::unique_ptr<DaemonOps>> Create(const OpsOptions& options,
                                                           ModelRepository* repository);

  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }
  // Registers ModelAdmin (logging a warning when it is open) and the
  // metrics interceptor.
  void ConfigureBuilder(grpc::ServerBuilder* builder);
  // Health SERVING (overall, scorer, every model); starts the metrics
  // endpoint and the memory trimmer. UNAVAILABLE if the metrics address
  // cannot be bound.
  absl::Status Started(grpc::Server* server, MetricsSources sources);

  // A device turned failing or healthy (DeviceRouter's listener): health
  // reports each model anew (NOT_SERVING where none of its devices can
  // serve; the overall status NOT_SERVING once none can).
  void DevicesChanged();
  // Health NOT_SERVING everywhere (models before the overall status, for
  // good), then waits drain_grace.
  void BeginDrain();
  // Stops the metrics endpoint (the sources it reads are about to go) and
  // the memory trimmer.
  void Stop();

  ServerMetrics& metrics() { return metrics_; }
  // 0 without a metrics endpoint.
  int metrics_port() const { return metrics_http_ == nullptr ? 0 : metrics_http_->port(); }

 private:
  DaemonOps(const OpsOptions& options, ModelRepository* repository)
      : options_(options), repository_(repository) {}

  const OpsOptions options_;
  ModelRepository* const repository_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  ServerMetrics metrics_;
  std::unique_ptr<HealthReporter> health_;
  std::unique_ptr<ModelAdminService> admin_;
  std::vector<std::unique_ptr<GpuMonitor>> gpus_;  // the backends' GPUs NVML serves
  std::unique_ptr<MetricsHttpServer> metrics_http_;
  std::unique_ptr<MemoryTrimmer> trimmer_;
  MetricsSources sources_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_DAEMON_OPS_H_
