#include "server/daemon_ops.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/device_router.h"
#include "server/log.h"

namespace gmmscore {

absl::StatusOr<std::unique_ptr<DaemonOps>> DaemonOps::Create(const OpsOptions& options,
                                                             ModelRepository* repository) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::unique_ptr<DaemonOps> ops(new DaemonOps(options, repository));
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  ops->credentials_ = *std::move(credentials);
  return ops;
}

void DaemonOps::ConfigureBuilder(grpc::ServerBuilder* builder) {
  // The admin service reports health once the server exists (Started).
  AdminAccess access =
      DecideAdminAccess(options_.admin_token, options_.scoring_token_set, options_.admin_open);
  if (!access.warning.empty()) LogWarning("%s", access.warning);
  admin_ = std::make_unique<ModelAdminService>(repository_, nullptr, std::move(access));
  builder->RegisterService(admin_.get());
  builder->experimental().SetInterceptorCreators(metrics_.InterceptorFactories());
}

namespace {

// The distinct GPU indexes of a backend list ("cuda:0,cuda:1,cuda:0"; a bare
// "cuda" is 0), ascending; none for "cpu".
std::vector<int> CudaDevicesOf(absl::string_view backends) {
  std::set<int> indexes;
  for (absl::string_view backend : absl::StrSplit(backends, ',')) {
    int index = 0;
    if (absl::ConsumePrefix(&backend, "cuda") &&
        (backend.empty() || (absl::ConsumePrefix(&backend, ":") && absl::SimpleAtoi(backend, &index)))) {
      indexes.insert(index);
    }
  }
  return {indexes.begin(), indexes.end()};
}

}  // namespace

absl::Status DaemonOps::Started(grpc::Server* server, MetricsSources sources) {
  health_ = std::make_unique<HealthReporter>(server->GetHealthCheckService());
  admin_->set_health(health_.get());
  for (const ServedModel& model : repository_->models()) health_->SetModel(model.name, true);
  health_->SetServing(true);
  if (const DeviceRouter* router = sources.devices; router != nullptr) {
    const ModelRepository* repository = repository_;
    health_->SetDeviceHealth(
        {.model_reachable =
             [router, repository](const std::string& name) {
               absl::StatusOr<std::shared_ptr<const ServedModel>> model = repository->Find(name);
               if (!model.ok()) return true;  // unloaded: its own entry says so
               for (int d : (*model)->devices()) {
                 if (!router->failing(d)) return true;
               }
               return false;
             },
         .server_can_serve =
             [router, repository] {
               const std::vector<ServedModel> models = repository->models();
               for (int d = 0; d < router->num_devices(); ++d) {
                 if (router->failing(d)) continue;
                 if (models.empty()) return true;
                 for (const ServedModel& model : models) {
                   if (model.replica(d) != nullptr) return true;
                 }
               }
               return false;
             }});
  }
  sources_ = std::move(sources);
  MemoryTrimmerOptions trim = options_.trim;
  if (const DeviceRouter* router = sources_.devices; router != nullptr && !trim.work_done) {
    // Frames scored and aligned: the trimmer waits for the load to fall
    // (memory_trimmer.h).
    const AlignScheduler* aligner = sources_.aligner;
    trim.work_done = [router, aligner] {
      return router->TotalStats().frames + (aligner != nullptr ? aligner->stats().frames_aligned : 0);
    };
  }
  trimmer_ = std::make_unique<MemoryTrimmer>(std::move(trim));
  if (!options_.metrics_listen.empty()) {
    for (int gpu_index : CudaDevicesOf(sources_.backend)) {
      absl::StatusOr<std::unique_ptr<GpuMonitor>> gpu =
          GpuMonitor::Open(gpu_index, options_.nvml_library);
      if (gpu.ok()) {
        gpus_.push_back(*std::move(gpu));
        sources_.gpus.push_back(gpus_.back().get());
      } else {
        LogInfo("no GPU memory/utilisation metrics for cuda:%d: %s", gpu_index, gpu.status().message());
      }
    }
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http = MetricsHttpServer::Start(
        options_.metrics_listen, [this] { return metrics_.Render(sources_); });
    if (!http.ok()) return http.status();
    metrics_http_ = *std::move(http);
  }
  return absl::OkStatus();
}

void DaemonOps::DevicesChanged() {
  if (health_ != nullptr) health_->Refresh();
}

void DaemonOps::BeginDrain() {
  if (health_ == nullptr) return;
  health_->BeginDrain();
  if (options_.drain_grace > absl::ZeroDuration()) {
    LogInfo("health NOT_SERVING; still accepting RPCs for %s (drain grace)",
            absl::FormatDuration(options_.drain_grace));
    absl::SleepFor(options_.drain_grace);
  }
  health_->Shutdown();
}

void DaemonOps::Stop() {
  trimmer_.reset();
  metrics_http_.reset();
  sources_.gpus.clear();
  gpus_.clear();
}

}  // namespace gmmscore
