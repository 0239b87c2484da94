// Daemon: a running gmmscored in one object: the scoring backends (one per
// device), the model repository, a batch scheduler per device, the
// AcousticScorer service and the gRPC server listening for it. gmmscored_main.cc is flags around this; the
// integration tests run it in-process.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<Daemon> daemon,
//       Daemon::Start(std::move(backend), std::move(repository),
//                     {.listen_address = "127.0.0.1:0"}));
//   ... daemon->port() ...
//   daemon->Drain(absl::Seconds(10));
#ifndef GMMSCORE_SERVER_DAEMON_H_
#define GMMSCORE_SERVER_DAEMON_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "kernels/score/scoring_backend.h"
#include "proto/grpc_args.h"
#include "server/adaptation_hub.h"
#include "server/align_scheduler.h"
#include "server/batch_scheduler.h"
#include "server/cq_stream_server.h"
#include "server/daemon_ops.h"
#include "server/device_prober.h"
#include "server/device_router.h"
#include "server/model_repository.h"
#include "server/scorer_service.h"
#include "server/slow_call_log.h"

namespace gmmscore {

struct DaemonOptions {
  // HOST:PORT to listen on (insecure credentials); port 0 picks a free one;
  // or unix:PATH (a unix socket, path of at most 107 bytes).
  std::string listen_address = "127.0.0.1:50051";
  BatchSchedulerOptions scheduler;
  // The Align RPC's queue and batches (models align when their repository
  // gave them an aligner: RepositoryOptions::align).
  AlignSchedulerOptions align;
  ServiceLimits limits;
  // Largest request or response message, bytes.
  int max_message_bytes = 256 << 20;
  // TLS, admin token, metrics endpoint, drain grace (server/daemon_ops.h).
  OpsOptions ops;
  // The gRPC API that carries StreamScore (server/scorer_service.h) and,
  // for the completion-queue API, how many queues serve it, one thread each
  // (0: one per core, at least 2).
  StreamApi stream_api = StreamApi::kCompletionQueue;
  int stream_threads = 0;
  // A client connection older than this gets GOAWAY, so that long-lived
  // clients reconnect and spread over pods a scaler adds; its RPCs then
  // have the grace to finish before the connection closes. Zero: never.
  // Each at most 2^31 - 1 ms (gRPC's int).
  absl::Duration max_connection_age = absl::ZeroDuration();
  absl::Duration max_connection_age_grace = absl::Seconds(30);
  // More gRPC arguments of every connection (--grpc_arg, proto/grpc_args.h),
  // added after gmmscored's own: HTTP/2 windows and frame sizes.
  std::vector<GrpcArg> grpc_args;
  // Live adaptation's workers and bounds (server/adaptation_hub.h).
  AdaptationLimits adaptation;
  // How often a failing device is probed for its recovery
  // (server/device_prober.h); zero: never.
  absl::Duration device_probe_interval = absl::Seconds(5);
};

// OK, or INVALID_ARGUMENT naming the flag behind the first bad option: batch,
// queue, stream and message limits, the scheduler's workers and the align
// queue's batch, workers and frame bound below 1, a negative align delay,
// negative stream threads, timeouts or connection ages, a stream's answer memory below 1 byte
// or the server's below 0, a unix socket path of 0 or over 107 bytes, a
// --grpc_arg not named grpc.* or named as one gmmscored sets from its own
// flags. Daemon::Start checks it first.
absl::Status ValidateDaemonOptions(const DaemonOptions& options);

class Daemon {
 public:
  // Takes ownership of `backend` and of `repository` (prepared on it).
  // UNAVAILABLE if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(std::unique_ptr<ScoringBackend> backend,
                                                       std::unique_ptr<ModelRepository> repository,
                                                       const DaemonOptions& options);
  // Several devices: backends[d] is the repository's device d, and gets a
  // scheduler of its own (options.scheduler each); streams and requests go
  // to the least-loaded device holding their models (device_router.h).
  // INVALID_ARGUMENT when the counts differ or a backend is null.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      std::vector<std::unique_ptr<ScoringBackend>> backends,
      std::unique_ptr<ModelRepository> repository, const DaemonOptions& options);
  // Drain(absl::ZeroDuration()) unless drained already.
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The port actually bound (1 for a unix socket, as gRPC says).
  int port() const { return port_; }
  // "HOST:PORT" with the bound port, or "unix:PATH" as given.
  const std::string& address() const { return address_; }

  // Stops accepting RPCs, lets live streams answer what they accepted (they
  // end with UNAVAILABLE), waits up to `timeout` for RPCs in flight, cancels
  // the rest, then finishes the scheduler's and the align queue. Idempotent,
  // thread-safe.
  void Drain(absl::Duration timeout);

  const ModelRepository& repository() const { return *repository_; }
  // Health, admin, metrics (daemon_ops.h).
  DaemonOps& ops() { return *ops_; }
  const ScorerService& service() const { return *service_; }
  // Every device's scheduler together, and the router over them.
  BatchSchedulerStats scheduler_stats() const { return router_->TotalStats(); }
  const DeviceRouter& devices() const { return *router_; }
  AlignSchedulerStats align_stats() const { return align_scheduler_->stats(); }
  AdaptationCounters adaptation_counters() const { return adaptation_->counters(); }
  // Completion-queue threads serving StreamScore; 0 on the callback API.
  int stream_threads() const { return cq_streams_ == nullptr ? 0 : cq_streams_->threads(); }
  // StreamScore calls by completion queue; empty on the callback API.
  std::vector<int64_t> stream_calls_per_queue() const {
    return cq_streams_ == nullptr ? std::vector<int64_t>{} : cq_streams_->CallsPerQueue();
  }

 private:
  Daemon() = default;
  // A Start that failed before the server ran: stops the schedulers.
  void StopUnstarted();

  // Destroyed in reverse order: the server first, the backends last.
  std::vector<std::unique_ptr<ScoringBackend>> backends_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<DaemonOps> ops_;  // its admin service outlives server_
  // Before the schedulers, whose workers report to it (ObserveGroup): it
  // goes after them. It holds their pointers only.
  std::unique_ptr<DeviceRouter> router_;
  // One per backend, fed by its scheduler's workers: before them too.
  std::vector<std::unique_ptr<SlowCallLog>> slow_calls_;
  std::vector<std::unique_ptr<BatchScheduler>> schedulers_;  // one per backend
  // Scores on the backends and reads the repository and the router: goes
  // before all three.
  std::unique_ptr<DeviceProber> prober_;
  // Holds aligners of model versions while their requests run; goes before
  // the repository and the backend they use.
  std::unique_ptr<AlignScheduler> align_scheduler_;
  // Live adaptation: prepares MAP models in the repository; its tasks hold
  // streams' adaptation state, never the sessions, so it goes after them.
  std::unique_ptr<AdaptationHub> adaptation_;
  std::unique_ptr<ScorerService> service_;
  // StreamScore's queues (completion-queue API only); the server, declared
  // after them, goes first.
  std::unique_ptr<CqStreamServer> cq_streams_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
  absl::Mutex drain_mu_;
  bool drained_ ABSL_GUARDED_BY(drain_mu_) = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_DAEMON_H_
