#include "server/scorer_service.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/rpc_status.h"
#include "server/scoring_plan.h"
#include "server/server_stats.h"

namespace gmmscore {
namespace {

// One Score RPC in flight: collects its per-model results from the
// scheduler, then answers and deletes itself.
class UnaryScoreCall {
 public:
  UnaryScoreCall(grpc::ServerUnaryReactor* reactor, v1::ScoreResponse* response, ScoringPlan plan)
      : reactor_(reactor), response_(response), plan_(std::move(plan)) {
    results_.resize(plan_.models.size());
    remaining_ = static_cast<int>(plan_.models.size());
  }

  void Submit(BatchScheduler* scheduler, std::shared_ptr<const FloatMatrix> frames) {
    const int num_models = static_cast<int>(plan_.models.size());
    for (int m = 0; m < num_models; ++m) {
      if (frames->rows() == 0) {  // nothing to batch
        ScoreResult empty;
        empty.loglikes.Resize(0, plan_.num_states);
        OnScored(m, std::move(empty));
        continue;
      }
      scheduler->Submit({.model = plan_.models[m]->prepared,
                         .features = frames,
                         .transform = plan_.transform,
                         .done = [this, m](absl::StatusOr<ScoreResult> result) {
                           OnScored(m, std::move(result));
                         }});
    }
  }

 private:
  void OnScored(int model, absl::StatusOr<ScoreResult> result) {
    absl::Status status;
    std::vector<ScoreResult> results;
    {
      absl::MutexLock lock(&mu_);
      if (result.ok()) {
        results_[model] = *std::move(result);
      } else if (status_.ok()) {
        status_ = result.status();
      }
      if (--remaining_ > 0) return;
      status = status_;
      results = std::move(results_);
    }
    // The last result: this thread alone touches the call from here on.
    if (status.ok()) {
      std::unique_ptr<ModelFusion> fusion;
      if (plan_.fusion.has_value()) {
        absl::StatusOr<ModelFusion> created =
            ModelFusion::Create(plan_.models.size(), *plan_.fusion);
        if (created.ok()) {
          fusion = std::make_unique<ModelFusion>(*std::move(created));
        } else {
          status = created.status();
        }
      }
      if (status.ok()) status = FillAnswer(plan_, results, fusion.get(), response_);
    }
    reactor_->Finish(ToGrpcStatus(status));
    delete this;
  }

  grpc::ServerUnaryReactor* const reactor_;
  v1::ScoreResponse* const response_;
  const ScoringPlan plan_;
  absl::Mutex mu_;
  std::vector<ScoreResult> results_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

ScorerService::ScorerService(const ModelRepository* repository, BatchScheduler* scheduler,
                             const ServiceLimits& limits)
    : repository_(repository),
      scheduler_(scheduler),
      limits_(limits),
      registry_(limits.max_streams) {}

grpc::ServerUnaryReactor* ScorerService::ListModels(grpc::CallbackServerContext* context,
                                                    const v1::ListModelsRequest*,
                                                    v1::ListModelsResponse* response) {
  for (const ServedModel& served : repository_->models()) {
    const DiagGmmModel& model = served.model();
    v1::ModelInfo* info = response->add_models();
    info->set_name(served.name);
    info->set_dim(model.dim());
    info->set_num_states(model.num_states());
    info->set_num_gaussians(model.num_gaussians());
    info->set_device(repository_->device());
    info->set_bytes(model.ByteSize());
    info->set_device_bytes(served.prepared->device_bytes());
    info->set_max_gaussians_per_state(model.max_gaussians_per_state());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ScorerService::Score(grpc::CallbackServerContext* context,
                                               const v1::ScoreRequest* request,
                                               v1::ScoreResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<ScoringPlan> plan = PlanForRequest(*request, *repository_);
  if (!plan.ok()) {
    reactor->Finish(ToGrpcStatus(plan.status()));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<const FloatMatrix>> frames = CheckFrames(
      request->features(), *plan,
      {.first_frame = 0, .max_frames = limits_.max_request_frames, .allow_empty = true});
  if (!frames.ok()) {
    reactor->Finish(ToGrpcStatus(frames.status()));
    return reactor;
  }
  auto* call = new UnaryScoreCall(reactor, response, *std::move(plan));
  call->Submit(scheduler_, *std::move(frames));
  return reactor;
}

grpc::ServerBidiReactor<v1::StreamScoreRequest, v1::StreamScoreResponse>*
ScorerService::StreamScore(grpc::CallbackServerContext* context) {
  streams_started_.fetch_add(1, std::memory_order_relaxed);
  StreamEnvironment env{.repository = repository_,
                        .scheduler = scheduler_,
                        .registry = &registry_,
                        .max_chunk_frames = limits_.max_chunk_frames,
                        .max_chunks_in_flight = limits_.max_chunks_in_flight,
                        .reactors_alive = &reactors_alive_};
  return new StreamScoreReactor(env, context->peer());
}

grpc::ServerUnaryReactor* ScorerService::GetServerStats(grpc::CallbackServerContext* context,
                                                        const v1::GetServerStatsRequest*,
                                                        v1::GetServerStatsResponse* response) {
  FillServerStats({.scheduler = scheduler_->stats(),
                   .live_streams = registry_.live_streams(),
                   .streams_started = streams_started_.load(std::memory_order_relaxed),
                   .uptime = absl::Now() - start_time_,
                   .device = repository_->device()},
                  response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void ScorerService::Drain() { registry_.DrainAll(); }

}  // namespace gmmscore
