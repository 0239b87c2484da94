#include "server/daemon.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

// --listen: HOST:PORT, [IPV6]:PORT or unix:PATH. gRPC reads a bare host as
// host:443 (`--listen localhost` bound port 443, or failed as non-root),
// so a port must be given.
absl::Status CheckListenAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) {
    // sockaddr_un holds 107 bytes of path and a NUL.
    const size_t path = address.size() - 5;
    if (path > 0 && path <= 107) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "--listen '%s': a unix socket's path must be 1 to 107 bytes", address));
  }
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  int number = 0;
  const bool bracketed = absl::StartsWith(host, "[") && absl::EndsWith(host, "]");
  if (host.empty() || (host.find(':') != std::string::npos && !bracketed) ||
      !absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--listen '%s' is not HOST:PORT, [IPV6]:PORT or unix:PATH (a port is required: gRPC would take "
        "a bare host as port 443); e.g. 0.0.0.0:50051",
        address));
  }
  return absl::OkStatus();
}

// "host:port" -> "host:<port>" with the port actually bound; a unix socket
// ("unix:PATH") as given (gRPC reports port 1 for it).
std::string WithPort(const std::string& address, int port) {
  if (absl::StartsWith(address, "unix:")) return address;
  const size_t colon = address.rfind(':');
  return absl::StrCat(colon == std::string::npos ? address : address.substr(0, colon), ":", port);
}

// --stream_threads: 0 means one queue per core, at least 2. The threads
// mostly wait; with half the cores (8 on 16) fast top_k at 10000 streams
// failed every run on an H200 host, with 16 it passed (docs/PERFORMANCE.md,
// 2026-11-28, "Queues per core").
int StreamThreads(int requested) {
  if (requested > 0) return requested;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
}

// The service's limits: the options', with the message limit gRPC enforces.
ServiceLimits LimitsOf(const DaemonOptions& options) {
  ServiceLimits limits = options.limits;
  limits.max_answer_bytes = options.max_message_bytes;
  return limits;
}

// --grpc_arg: gRPC's names only, and none that gmmscored sets from its own
// flags: given last, gRPC would take them over those flags and their checks
// (the answer limits assume --max_message_mb is what gRPC enforces).
absl::Status CheckGrpcArgs(const std::vector<GrpcArg>& args) {
  constexpr std::pair<const char*, const char*> kOwn[] = {
      {GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, "--max_message_mb"},
      {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, "--max_message_mb"},
      {GRPC_ARG_MAX_CONNECTION_AGE_MS, "--max_connection_age_s"},
      {GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, "--max_connection_age_grace_s"},
  };
  for (const GrpcArg& arg : args) {
    if (!absl::StartsWith(arg.name, "grpc.") || arg.name.size() == 5) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--grpc_arg '%s' is not one of gRPC's names (grpc....)", arg.name));
    }
    for (const auto& [name, flag] : kOwn) {
      if (arg.name == name) {
        return absl::InvalidArgumentError(
            absl::StrFormat("--grpc_arg %s: set it with %s instead", arg.name, flag));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDaemonOptions(const DaemonOptions& options) {
  GMM_RETURN_IF_ERROR(CheckListenAddress(options.listen_address));
  const BatchSchedulerOptions& scheduler = options.scheduler;
  const ServiceLimits& limits = options.limits;
  if (scheduler.max_batch_frames < 1 || scheduler.num_workers < 1 ||
      scheduler.max_queued_frames < 1 || scheduler.overload_wait < absl::ZeroDuration() ||
      scheduler.full_queue_wait < absl::ZeroDuration() ||
      limits.max_chunk_frames < 1 ||
      limits.max_chunks_in_flight < 1 || limits.max_streams < 1 ||
      limits.max_request_frames < 1 || options.max_message_bytes < 1) {
    return absl::InvalidArgumentError(
        "--max_batch_frames, --scheduler_workers, --max_queued_frames, --max_chunk_frames, "
        "--max_chunks_in_flight, --max_streams, --max_request_frames and --max_message_mb must "
        "be >= 1, --overload_queue_ms and --queue_full_wait_ms >= 0 (see --help)");
  }
  const AlignSchedulerOptions& align = options.align;
  if (align.max_batch < 1 || align.num_workers < 1 || align.max_queued_frames < 1) {
    return absl::InvalidArgumentError(
        "--align_max_batch, --align_workers and --max_align_queued_frames must be >= 1 (see --help)");
  }
  if (options.adaptation.workers < 1 || options.adaptation.max_saved < 1 ||
      options.adaptation.max_backlog_frames < 1) {
    return absl::InvalidArgumentError(
        "--adaptation_workers, --max_saved_adaptations and --adaptation_backlog_frames must be "
        ">= 1 (see --help)");
  }
  if (align.max_queue_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--align_queue_delay_us must be >= 0");
  }
  if (options.stream_threads < 0) {
    return absl::InvalidArgumentError("--stream_threads must be >= 0 (0: one per core)");
  }
  // gRPC takes both as int milliseconds: at most 2^31 - 1 ms (24.8 days).
  const absl::Duration longest = absl::Milliseconds(std::numeric_limits<int>::max());
  if (options.max_connection_age < absl::ZeroDuration() || options.max_connection_age > longest) {
    return absl::InvalidArgumentError("--max_connection_age_s must be 0 (never) to 2147483 (24.8 days)");
  }
  if (options.max_connection_age_grace < absl::ZeroDuration() || options.max_connection_age_grace > longest) {
    return absl::InvalidArgumentError("--max_connection_age_grace_s must be 0 to 2147483 (24.8 days)");
  }
  if (limits.stream_idle_timeout < absl::ZeroDuration() ||
      limits.stream_write_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--stream_idle_timeout_s and --stream_write_timeout_s must be >= 0 (0: no timeout)");
  }
  if (limits.max_stream_answer_bytes < 1 || limits.max_answer_memory_bytes < 0) {
    return absl::InvalidArgumentError(
        "--stream_answer_memory_mb must be >= 1 and --answer_memory_mb >= 0 (0: no limit)");
  }
  return CheckGrpcArgs(options.grpc_args);
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(std::unique_ptr<ScoringBackend> backend,
                                                      std::unique_ptr<ModelRepository> repository,
                                                      const DaemonOptions& options) {
  std::vector<std::unique_ptr<ScoringBackend>> backends;
  backends.push_back(std::move(backend));
  return Start(std::move(backends), std::move(repository), options);
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    std::vector<std::unique_ptr<ScoringBackend>> backends,
    std::unique_ptr<ModelRepository> repository, const DaemonOptions& options) {
  GMM_RETURN_IF_ERROR(ValidateDaemonOptions(options));
  if (repository == nullptr || backends.empty() ||
      static_cast<int>(backends.size()) != repository->num_devices()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the daemon has %d backends for a repository of %d devices; give one backend per device",
        backends.size(), repository == nullptr ? 0 : repository->num_devices()));
  }
  for (const auto& backend : backends) {
    if (backend == nullptr) return absl::InvalidArgumentError("a daemon backend is null");
  }
  std::unique_ptr<Daemon> daemon(new Daemon());
  daemon->backends_ = std::move(backends);
  daemon->repository_ = std::move(repository);
  OpsOptions ops_options = options.ops;
  ops_options.scoring_token_set = !options.limits.required_token.empty();
  absl::StatusOr<std::unique_ptr<DaemonOps>> ops =
      DaemonOps::Create(ops_options, daemon->repository_.get());
  if (!ops.ok()) {
    daemon->StopUnstarted();
    return ops.status();
  }
  daemon->ops_ = *std::move(ops);

  // Every backend call feeds the batch and latency histograms and its
  // device's recent busy time; ops_ and the router outlive the schedulers
  // (members are destroyed in reverse order), and the router is made before
  // any job can reach a scheduler.
  ServerMetrics* metrics = &daemon->ops_->metrics();
  Daemon* self = daemon.get();
  std::vector<BatchScheduler*> schedulers;
  std::vector<std::string> names;
  // The answer threads' default (half the cores) is the host's, not each
  // scheduler's: shared out, so that N schedulers do not start N times as
  // many threads as there are cores.
  const int devices = static_cast<int>(daemon->backends_.size());
  int answer_threads = options.scheduler.num_answer_threads;
  if (answer_threads <= 0 && devices > 1) {
    answer_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2 / devices);
  }
  for (size_t d = 0; d < daemon->backends_.size(); ++d) {
    BatchSchedulerOptions scheduler_options = options.scheduler;
    scheduler_options.num_answer_threads = answer_threads;
    // GPUs only: the CPU backend's batches take 50 ms and more by design.
    const std::string device = daemon->repository_->device_name(static_cast<int>(d));
    SlowCallLog* slow = nullptr;
    if (absl::StartsWith(device, "cuda")) {
      daemon->slow_calls_.push_back(std::make_unique<SlowCallLog>(SlowCallLogOptions{.device = device}));
      slow = daemon->slow_calls_.back().get();
    }
    scheduler_options.on_group = [metrics, self, d, slow, chained = options.scheduler.on_group](
                                     const GroupReport& report) {
      metrics->ObserveGroup(report);
      self->router_->ObserveGroup(static_cast<int>(d), report);
      if (slow != nullptr) slow->Observe(report);
      if (chained) chained(report);
    };
    scheduler_options.on_backend_outcome = [self, d, chained = options.scheduler.on_backend_outcome](
                                               const absl::Status& outcome) {
      self->router_->ObserveBackend(static_cast<int>(d), outcome);
      if (chained) chained(outcome);
    };
    daemon->schedulers_.push_back(
        std::make_unique<BatchScheduler>(daemon->backends_[d].get(), std::move(scheduler_options)));
    schedulers.push_back(daemon->schedulers_.back().get());
    names.push_back(daemon->repository_->device_name(static_cast<int>(d)));
  }
  daemon->router_ = std::make_unique<DeviceRouter>(std::move(schedulers), std::move(names));
  AlignSchedulerOptions align_options = options.align;
  align_options.on_batch = [metrics, chained = options.align.on_batch](const AlignBatchReport& report) {
    metrics->ObserveAlignBatch(report);
    if (chained) chained(report);
  };
  daemon->align_scheduler_ = std::make_unique<AlignScheduler>(std::move(align_options));
  daemon->adaptation_ =
      std::make_unique<AdaptationHub>(daemon->repository_.get(), options.adaptation);
  daemon->service_ = std::make_unique<ScorerService>(
      daemon->repository_.get(), daemon->router_.get(), LimitsOf(options), options.stream_api,
      daemon->align_scheduler_.get(), daemon->adaptation_.get());

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, daemon->ops_->credentials(), &daemon->port_);
  builder.RegisterService(daemon->service_.get());
  daemon->ops_->ConfigureBuilder(&builder);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.max_connection_age > absl::ZeroDuration()) {
    // gRPC adds up to +-10% jitter, so that a fleet's connections do not
    // all close at once.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(options.max_connection_age)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(options.max_connection_age_grace)));
  }
  ApplyGrpcArgs(options.grpc_args, &builder);
  if (options.stream_api == StreamApi::kCompletionQueue) {
    daemon->cq_streams_ = std::make_unique<CqStreamServer>(
        &builder, daemon->service_.get(), StreamThreads(options.stream_threads));
  }
  daemon->server_ = builder.BuildAndStart();
  if (daemon->server_ == nullptr || daemon->port_ == 0) {
    daemon->StopUnstarted();
    return absl::UnavailableError(
        absl::StrFormat("cannot listen on %s (address in use, or not HOST:PORT?)",
                        options.listen_address));
  }
  if (daemon->cq_streams_ != nullptr) daemon->cq_streams_->Start();
  daemon->address_ = WithPort(options.listen_address, daemon->port_);
  absl::Status ops_started = daemon->ops_->Started(
      daemon->server_.get(), {.repository = daemon->repository_.get(),
                              .service = daemon->service_.get(),
                              .devices = daemon->router_.get(),
                              .aligner = daemon->align_scheduler_.get(),
                              .adaptation = daemon->adaptation_.get(),
                              .stream_queues = daemon->cq_streams_.get(),
                              .backend = daemon->repository_->device()});
  if (!ops_started.ok()) {
    daemon->Drain(absl::ZeroDuration());
    return ops_started;
  }
  // After Started, which made the health reporter: transitions are
  // reported from here on, and one that happened since the port opened is
  // reported now (no second change may follow while a device stays failing).
  daemon->router_->SetHealthListener([self] { self->ops_->DevicesChanged(); });
  daemon->ops_->DevicesChanged();
  daemon->prober_ = std::make_unique<DeviceProber>(
      daemon->router_.get(),
      [self](int device) {
        return ProbeDevice(*self->backends_[device], *self->repository_, device);
      },
      options.device_probe_interval);
  return daemon;
}

void Daemon::StopUnstarted() {
  {
    absl::MutexLock lock(&drain_mu_);
    drained_ = true;
  }
  if (cq_streams_ != nullptr) cq_streams_->Stop();
  for (auto& scheduler : schedulers_) scheduler->Stop();
  if (align_scheduler_ != nullptr) align_scheduler_->Stop();
  if (adaptation_ != nullptr) adaptation_->Stop();
}

Daemon::~Daemon() { Drain(absl::ZeroDuration()); }

void Daemon::Drain(absl::Duration timeout) {
  absl::MutexLock lock(&drain_mu_);
  if (drained_) return;
  drained_ = true;
  ops_->BeginDrain();
  service_->Drain();
  // After the health report: a probe stuck on a wedged GPU must not delay
  // NOT_SERVING.
  if (prober_ != nullptr) prober_->Stop();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + timeout));
  for (auto& scheduler : schedulers_) scheduler->Stop();
  align_scheduler_->Stop();
  server_->Wait();
  if (cq_streams_ != nullptr) cq_streams_->Stop();  // every call has ended
  adaptation_->Stop();  // runs what the streams handed it last
  ops_->Stop();
}

}  // namespace gmmscore
