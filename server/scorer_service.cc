#include "server/scorer_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "proto/rpc_status.h"
#include "server/align_request.h"
#include "server/auth_token.h"
#include "server/callback_stream_call.h"
#include "server/scoring_plan.h"
#include "server/server_stats.h"

namespace gmmscore {
namespace {

// The idle watchdog wakes for the shorter of the two stream timeouts.
absl::Duration WatchdogTimeout(const ServiceLimits& limits) {
  const absl::Duration idle = limits.stream_idle_timeout;
  const absl::Duration write = limits.stream_write_timeout;
  if (idle <= absl::ZeroDuration()) return write;
  if (write <= absl::ZeroDuration()) return idle;
  return std::min(idle, write);
}

// An RPC's deadline as an absl::Time (gRPC's "none" is the far future).
absl::Time DeadlineOf(const grpc::ServerContextBase& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// One Score RPC in flight, as its own reactor so that a cancellation drops
// its queued jobs (within the scheduler's min_purge_interval): collects its per-model results from the
// scheduler, answers, and deletes itself once the RPC is done and no job
// refers to it.
class UnaryScoreCall final : public grpc::ServerUnaryReactor {
 public:
  // A plan of several models is scored as one fused job (the backend fuses:
  // on CUDA on the device); a single model as one plain job.
  // `placement`: the device `router` placed the plan on (plan.device), held
  // for the call's life. A job that fails there with a device fault is
  // scored again on a healthy peer holding the plan's models, as a stream's
  // chunk is (StreamScoreSession), at most once per other device.
  UnaryScoreCall(DeviceRouter* router, DeviceAssignment placement, v1::ScoreResponse* response,
                 ScoringPlan plan)
      : router_(router),
        scheduler_(router->scheduler(plan.device)),
        placement_(std::move(placement)),
        response_(response),
        plan_(std::move(plan)) {
    results_.resize(plan_.models.size());
    remaining_ = static_cast<int>(plan_.models.size());
    refs_ = remaining_ + 1;  // the jobs, and the RPC until OnDone
  }

  void Submit(std::shared_ptr<const FloatMatrix> frames, absl::Time deadline) {
    const int num_models = static_cast<int>(plan_.models.size());
    if (frames->rows() == 0) {  // nothing to batch; fused on the host in Answer
      for (int m = 0; m < num_models; ++m) {
        ScoreResult empty;
        empty.loglikes.Resize(0, plan_.num_states);
        OnScored(m, plan_.device, std::move(empty));
      }
      return;
    }
    if (plan_.fusion.has_value()) {
      // PlanForRequest checked the options, so every try's fresh state
      // (FusedJobLocked) is made as this one is.
      if (absl::StatusOr<ModelFusion> state = ModelFusion::Create(num_models, *plan_.fusion); !state.ok()) {
        for (int m = 0; m < num_models; ++m) OnScored(m, plan_.device, state.status());
        return;
      }
    }
    std::vector<ScoreJob> jobs;
    BatchScheduler* scheduler;
    {
      absl::MutexLock lock(&mu_);
      frames_ = std::move(frames);
      deadline_ = deadline;
      scheduler = router_->scheduler(plan_.device);
      if (plan_.fusion.has_value()) {
        // The one job stands for every model's: the others' references and
        // results are settled now.
        const int others = num_models - 1;
        remaining_ -= others;
        refs_ -= others;
        jobs.push_back(FusedJobLocked());
      } else {
        for (int m = 0; m < num_models; ++m) jobs.push_back(ModelJobLocked(m));
      }
    }
    // May complete (and delete) this call before it returns.
    scheduler->SubmitAll(std::move(jobs));
  }

  void OnCancel() override {
    cancelled_->store(true, std::memory_order_release);
    scheduler_.load(std::memory_order_acquire)->PurgeDead();
  }
  void OnDone() override { Unref(); }

 private:
  ScoreJob ModelJobLocked(int m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return {.model = ReplicaOf(plan_, m),
            .features = frames_,
            .transform = plan_.transform,
            .cancelled = cancelled_,
            .deadline = deadline_,
            .origin = this,
            .max_batch_frames = plan_.models[m]->max_batch_frames,
            .precision = plan_.models[m]->precision,
            .select = plan_.sparse,
            .half_from_best = WantsHalvesFromBackend(plan_, /*adapts=*/false),
            .done = [this, m, device = plan_.device](absl::StatusOr<ScoreResult> result) {
              OnScored(m, device, std::move(result));
            }};
  }

  // A fresh fusion state for every try: a failed job's is unspecified.
  ScoreJob FusedJobLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<ModelFusion> state = ModelFusion::Create(plan_.models.size(), *plan_.fusion);
    // Submit made one from the same options before: this one is made too.
    return {.model = ReplicaOf(plan_, 0),
            .features = frames_,
            .transform = plan_.transform,
            .cancelled = cancelled_,
            .deadline = deadline_,
            .origin = this,
            .max_batch_frames = SmallestBatchCap(plan_),
            .fusion = FusedChunkFor(plan_, *std::move(state)),
            .fused_done = [this, device = plan_.device](absl::StatusOr<FusedChunkResult> result) {
              OnFused(device, std::move(result));
            }};
  }

  // Moves the call off `device` after a device fault there, to a healthy
  // peer holding its models that it has not failed on yet; the scheduler
  // to submit the job again to, or null to fail as it is.
  BatchScheduler* MoveOffLocked(int device, const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!IsDeviceFault(status) || frames_ == nullptr || cancelled_->load(std::memory_order_acquire)) {
      return nullptr;
    }
    if (std::find(failed_on_.begin(), failed_on_.end(), device) == failed_on_.end()) {
      failed_on_.push_back(device);
    }
    if (std::find(failed_on_.begin(), failed_on_.end(), plan_.device) != failed_on_.end()) {
      absl::StatusOr<DeviceAssignment> moved = router_->Move(plan_.models, failed_on_);
      if (!moved.ok()) return nullptr;
      placement_ = *std::move(moved);
      plan_.device = placement_.device();
      scheduler_.store(router_->scheduler(plan_.device), std::memory_order_release);
    }
    return router_->scheduler(plan_.device);
  }

  void OnFused(int device, absl::StatusOr<FusedChunkResult> result) {
    if (!result.ok()) {
      std::vector<ScoreJob> again;
      BatchScheduler* scheduler;
      {
        absl::MutexLock lock(&mu_);
        scheduler = MoveOffLocked(device, result.status());
        if (scheduler != nullptr) again.push_back(FusedJobLocked());
      }
      // The job's reference passes to its second try.
      if (scheduler != nullptr) return scheduler->SubmitAll(std::move(again));
    }
    if (result.ok()) {
      results_fused_.emplace(std::move(result->fused));
      Answer(absl::OkStatus(), result->models);
    } else {
      Answer(result.status(), {});
    }
    Unref();
  }

  void OnScored(int model, int device, absl::StatusOr<ScoreResult> result) {
    absl::Status status;
    std::vector<ScoreResult> results;
    bool last;
    std::vector<ScoreJob> again;
    BatchScheduler* scheduler = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (!result.ok()) scheduler = MoveOffLocked(device, result.status());
      if (scheduler != nullptr) {
        again.push_back(ModelJobLocked(model));
      } else if (result.ok()) {
        results_[model] = *std::move(result);
      } else if (status_.ok()) {
        status_ = result.status();
      }
      last = scheduler == nullptr && --remaining_ == 0;
      if (last) {
        status = status_;
        results = std::move(results_);
      }
    }
    // The job's reference passes to its second try.
    if (scheduler != nullptr) return scheduler->SubmitAll(std::move(again));
    // The last result: this thread alone writes the response.
    if (last) Answer(status, results);
    Unref();
  }

  void Answer(absl::Status status, const std::vector<ScoreResult>& results) {
    if (status.ok() && results_fused_.has_value()) {
      status = FillFusedAnswer(plan_, results, *results_fused_, response_);
    } else if (status.ok()) {
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
    Finish(ToGrpcStatus(status));
  }

  void Unref() {
    bool gone;
    {
      absl::MutexLock lock(&mu_);
      gone = --refs_ == 0;
    }
    if (gone) delete this;
  }

  DeviceRouter* const router_;
  // The device's scheduler now, read by OnCancel without the lock.
  std::atomic<BatchScheduler*> scheduler_;
  absl::Mutex mu_;
  DeviceAssignment placement_ ABSL_GUARDED_BY(mu_);
  v1::ScoreResponse* const response_;
  // Its device changes (under mu_) only when the call moves, before its
  // last result; Answer reads the rest.
  ScoringPlan plan_;
  const std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<const FloatMatrix> frames_ ABSL_GUARDED_BY(mu_);  // kept for a second try
  absl::Time deadline_ ABSL_GUARDED_BY(mu_);
  std::vector<int> failed_on_ ABSL_GUARDED_BY(mu_);  // devices a job failed on with a device fault
  std::vector<ScoreResult> results_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
  int refs_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  // Set by OnFused, the only completion of a fused call, before Answer.
  std::optional<FusedScores> results_fused_;
};

// One Align RPC in flight: its utterance waits in the align queue, for the
// aligner over the device the router placed it on; answers when the job
// completes and deletes itself once the RPC is done too. Its outcome
// judges the device's health as a scoring dispatch does (an alignment is
// scored there). A job that fails there with a device fault is aligned
// again on a healthy device that holds the model and was not tried yet
// (DeviceRouter::Move), as a Score request is scored again; with none, the
// client gets the device's error. A stopping scheduler's refusal
// (UNAVAILABLE) is not the device's.
class AlignCall final : public grpc::ServerUnaryReactor {
 public:
  // `request` and `response` are the RPC's; gRPC keeps them until OnDone.
  AlignCall(AlignScheduler* scheduler, DeviceRouter* router, std::shared_ptr<const ServedModel> model,
            DeviceAssignment placement, AlignLimits limits, const v1::AlignRequest* request,
            v1::AlignResponse* response)
      : scheduler_(scheduler),
        router_(router),
        model_(std::move(model)),
        placement_(std::move(placement)),
        limits_(limits),
        request_(request),
        response_(response) {}

  void Submit(AlignJob job, absl::Time deadline) {
    frame_seconds_ = job.aligner->frame_seconds();
    deadline_ = deadline;
    job.cancelled = cancelled_;
    job.deadline = deadline;
    job.done = [this](absl::StatusOr<AlignOutcome> outcome) { OnAligned(std::move(outcome)); };
    scheduler_->Submit(std::move(job));  // may complete (not delete) this call before it returns
  }

  void OnCancel() override {
    cancelled_->store(true, std::memory_order_release);
    scheduler_->PurgeDead();
  }
  void OnDone() override { Unref(); }

 private:
  void OnAligned(absl::StatusOr<AlignOutcome> outcome) {
    const bool device_fault = !outcome.ok() && IsDeviceFault(outcome.status()) && !scheduler_->stopping();
    if (outcome.ok() || device_fault) router_->ObserveBackend(placement_.device(), outcome.status());
    if (device_fault && AlignElsewhere()) return;  // the new job holds the reference
    if (outcome.ok()) FillAlignResponse(*request_, *outcome, frame_seconds_, response_);
    placement_ = DeviceAssignment();  // no longer the device's load
    Finish(ToGrpcStatus(outcome.status()));
    Unref();
  }

  // After the job failed with a device fault: whether it went to another
  // device, a job made again from the request (which gRPC keeps until
  // OnDone).
  bool AlignElsewhere() {
    if (cancelled_->load(std::memory_order_acquire)) return false;
    failed_on_.push_back(placement_.device());
    absl::StatusOr<DeviceAssignment> moved = router_->Move({model_}, failed_on_);
    if (!moved.ok()) return false;
    absl::StatusOr<AlignJob> job = AlignJobForRequest(*request_, *model_, moved->device(), limits_);
    if (!job.ok()) return false;
    placement_ = *std::move(moved);
    Submit(*std::move(job), deadline_);
    return true;
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  AlignScheduler* const scheduler_;
  DeviceRouter* const router_;
  const std::shared_ptr<const ServedModel> model_;
  // Where the job is aligned now (counted in that device's load), and every
  // device it failed on. Touched only by the job's completions, one at a
  // time.
  DeviceAssignment placement_;
  std::vector<int> failed_on_;
  const AlignLimits limits_;
  const v1::AlignRequest* const request_;
  v1::AlignResponse* const response_;
  const std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  double frame_seconds_ = 0.01;  // set by Submit, before the job can complete
  absl::Time deadline_ = absl::InfiniteFuture();
  std::atomic<int> refs_{2};     // the job, and the RPC until OnDone
};

// A method's index among AcousticScorer's methods, as gRPC's generated code
// numbers them (the order of the proto).
int MethodIndex(const char* method) {
  return v1::StreamScoreRequest::descriptor()
      ->file()
      ->FindServiceByName("AcousticScorer")
      ->FindMethodByName(method)
      ->index();
}

int StreamScoreMethodIndex() {
  static const int index = MethodIndex("StreamScore");
  return index;
}

// A unary reactor already finished with `status`.
grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

absl::StatusOr<StreamApi> ParseStreamApi(absl::string_view name) {
  if (name == "cq") return StreamApi::kCompletionQueue;
  if (name == "callback") return StreamApi::kCallback;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown stream API '", name, "'; use cq or callback"));
}

ScorerService::ScorerService(const ModelRepository* repository, BatchScheduler* scheduler,
                             const ServiceLimits& limits, StreamApi stream_api,
                             AlignScheduler* aligner, AdaptationHub* adaptation)
    : ScorerService(repository,
                    std::make_unique<DeviceRouter>(std::vector<BatchScheduler*>{scheduler},
                                                   std::vector<std::string>{repository->device()}),
                    limits, stream_api, aligner, adaptation, nullptr) {}

ScorerService::ScorerService(const ModelRepository* repository, DeviceRouter* router,
                             const ServiceLimits& limits, StreamApi stream_api,
                             AlignScheduler* aligner, AdaptationHub* adaptation)
    : ScorerService(repository, std::unique_ptr<DeviceRouter>(), limits, stream_api, aligner, adaptation,
                    router) {}

ScorerService::ScorerService(const ModelRepository* repository, std::unique_ptr<DeviceRouter> own_router,
                             const ServiceLimits& limits, StreamApi stream_api,
                             AlignScheduler* aligner, AdaptationHub* adaptation, DeviceRouter* router)
    : repository_(repository),
      own_router_(std::move(own_router)),
      router_(router != nullptr ? router : own_router_.get()),
      aligner_(aligner),
      adaptation_(adaptation),
      limits_(limits),
      registry_(limits.max_streams),
      answer_budget_(limits.max_answer_memory_bytes),
      idle_watchdog_(&registry_, WatchdogTimeout(limits)) {
  // Score decodes its own request (as the generated WithCallbackMethod_
  // would mark it, with the decoding verdict kept for the method).
  MarkMethodCallback(
      MethodIndex("Score"),
      new grpc::internal::CallbackUnaryHandler<DecodedMessage<v1::ScoreRequest>, v1::ScoreResponse>(
          [this](grpc::CallbackServerContext* context,
                 const DecodedMessage<v1::ScoreRequest>* request, v1::ScoreResponse* response) {
            return Score(context, request, response);
          }));
  MarkMethodCallback(
      MethodIndex("Align"),
      new grpc::internal::CallbackUnaryHandler<DecodedMessage<v1::AlignRequest>, v1::AlignResponse>(
          [this](grpc::CallbackServerContext* context,
                 const DecodedMessage<v1::AlignRequest>* request, v1::AlignResponse* response) {
            return Align(context, request, response);
          }));
  // The base left StreamScore a synchronous method: mark it for the API
  // chosen (as the generated WithAsyncMethod_/WithCallbackMethod_ would).
  if (stream_api == StreamApi::kCompletionQueue) {
    MarkMethodAsync(StreamScoreMethodIndex());
  } else {
    MarkMethodCallback(
        StreamScoreMethodIndex(),
        new grpc::internal::CallbackBidiHandler<StreamRequestIn, grpc::ByteBuffer>(
            [this](grpc::CallbackServerContext* context) {
              auto* call = new CallbackStreamCall(context);
              StartStream(*context, call);
              return call;
            }));
  }
}

absl::Status ScorerService::CheckToken(const grpc::ServerContextBase& context) const {
  return CheckBearerToken(context.client_metadata(), limits_.required_token);
}

grpc::ServerUnaryReactor* ScorerService::ListModels(grpc::CallbackServerContext* context,
                                                    const v1::ListModelsRequest*,
                                                    v1::ListModelsResponse* response) {
  if (absl::Status token = CheckToken(*context); !token.ok()) return Refuse(context, token);
  for (const ServedModel& served : repository_->models()) {
    // Tied models: num_gaussians counts the codebook Gaussians evaluated per
    // frame (all streams), max_gaussians_per_state those one state mixes.
    const PreparedModel& model = *served.prepared;
    v1::ModelInfo* info = response->add_models();
    info->set_name(served.name);
    info->set_dim(model.dim());
    info->set_num_states(model.num_states());
    info->set_num_gaussians(model.gaussians_per_frame());
    std::vector<std::string> devices;
    for (int d : served.devices()) devices.push_back(repository_->device_name(d));
    info->set_device(absl::StrJoin(devices, ","));
    info->set_bytes(model.host_bytes());
    int64_t device_bytes = 0;  // every replica's, as gmmscore_model_device_bytes
    for (int d : served.devices()) device_bytes += served.replica(d)->device_bytes();
    info->set_device_bytes(device_bytes);
    info->set_max_gaussians_per_state(model.max_gaussians_per_state());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ScorerService::Score(grpc::CallbackServerContext* context,
                                               const DecodedMessage<v1::ScoreRequest>* decoded,
                                               v1::ScoreResponse* response) {
  if (absl::Status token = CheckToken(*context); !token.ok()) return Refuse(context, token);
  if (!decoded->status.ok()) return Refuse(context, decoded->status);
  const v1::ScoreRequest* request = &decoded->message;
  absl::StatusOr<ScoringPlan> plan = PlanForRequest(*request, *repository_);
  if (!plan.ok()) return Refuse(context, plan.status());
  absl::StatusOr<std::shared_ptr<const FloatMatrix>> frames = CheckFrames(
      request->features(), *plan,
      {.first_frame = 0, .max_frames = limits_.max_request_frames, .allow_empty = true});
  if (!frames.ok()) return Refuse(context, frames.status());
  // Before any scoring: an answer that could not be sent is never computed.
  const int64_t answer_bytes = ResultBytes(*plan, (*frames)->rows());
  if (answer_bytes > limits_.max_answer_bytes) {
    return Refuse(context, absl::ResourceExhaustedError(absl::StrFormat(
                               "the answer to %d frames x %d states x %d score sets would be "
                               "%.1f MiB, above this server's message limit of %.1f MiB "
                               "(--max_message_mb); send fewer frames per request, fewer models, "
                               "or use StreamScore",
                               (*frames)->rows(), plan->num_states, ResultSets(*plan),
                               answer_bytes / 1048576.0, limits_.max_answer_bytes / 1048576.0)));
  }
  absl::StatusOr<DeviceAssignment> placement = router_->Assign(plan->models);
  if (!placement.ok()) return Refuse(context, placement.status());
  if (absl::Status admitted = router_->scheduler(placement->device())->AdmitNew(); !admitted.ok()) {
    return Refuse(context, admitted);
  }
  plan->device = placement->device();
  CountRequest(*plan, (*frames)->rows());
  auto* call = new UnaryScoreCall(router_, *std::move(placement), response, *std::move(plan));
  call->Submit(*std::move(frames), DeadlineOf(*context));
  return call;
}

grpc::ServerUnaryReactor* ScorerService::Align(grpc::CallbackServerContext* context,
                                               const DecodedMessage<v1::AlignRequest>* decoded,
                                               v1::AlignResponse* response) {
  if (absl::Status token = CheckToken(*context); !token.ok()) return Refuse(context, token);
  if (!decoded->status.ok()) return Refuse(context, decoded->status);
  if (aligner_ == nullptr) {
    return Refuse(context, absl::UnimplementedError("this server was started without an align queue"));
  }
  absl::StatusOr<std::shared_ptr<const ServedModel>> model = AligningModel(decoded->message, *repository_);
  if (!model.ok()) return Refuse(context, model.status());
  // The least loaded healthy device holding the model, as for Score.
  absl::StatusOr<DeviceAssignment> placement = router_->Assign({*model});
  if (!placement.ok()) return Refuse(context, placement.status());
  const AlignLimits limits{.max_frames = limits_.max_request_frames};
  absl::StatusOr<AlignJob> job = AlignJobForRequest(decoded->message, **model, placement->device(), limits);
  if (!job.ok()) return Refuse(context, job.status());
  auto* call = new AlignCall(aligner_, router_, *std::move(model), *std::move(placement), limits, &decoded->message,
                             response);
  call->Submit(*std::move(job), DeadlineOf(*context));
  return call;
}

void ScorerService::RequestStream(grpc::ServerContext* context, StreamScoreReaderWriter* stream,
                                  grpc::ServerCompletionQueue* cq, void* tag) {
  RequestAsyncBidiStreaming(StreamScoreMethodIndex(), context, stream, cq, cq, tag);
}

void ScorerService::StartStream(const grpc::ServerContextBase& context, StreamCall* call) {
  const absl::Status token = CheckToken(context);
  if (token.ok()) streams_started_.fetch_add(1, std::memory_order_relaxed);
  StreamEnvironment env{.repository = repository_,
                        .router = router_,
                        .registry = &registry_,
                        .max_chunk_frames = limits_.max_chunk_frames,
                        .max_chunks_in_flight = limits_.max_chunks_in_flight,
                        .idle_timeout = limits_.stream_idle_timeout,
                        .write_timeout = limits_.stream_write_timeout,
                        .answer_budget = &answer_budget_,
                        .max_stream_answer_bytes = limits_.max_stream_answer_bytes,
                        .sessions_alive = &sessions_alive_,
                        .answer_memory_waits = &answer_memory_waits_,
                        .stalled_streams = &stalled_streams_,
                        .send_stats = &answer_send_stats_,
                        .adaptation = adaptation_,
                        .audio_stats = &audio_stats_};
  // Deletes itself once its RPC is done and no job refers to it.
  new StreamScoreSession(env, call, context.peer(), DeadlineOf(context), token);
}

grpc::ServerUnaryReactor* ScorerService::GetServerStats(grpc::CallbackServerContext* context,
                                                        const v1::GetServerStatsRequest*,
                                                        v1::GetServerStatsResponse* response) {
  if (absl::Status token = CheckToken(*context); !token.ok()) return Refuse(context, token);
  FillServerStats({.scheduler = router_->TotalStats(),
                   .devices = DeviceCountersOf(*router_),
                   .answers = answer_send_stats_.totals(),
                   .live_streams = registry_.live_streams(),
                   .streams_started = streams_started_.load(std::memory_order_relaxed),
                   .uptime = absl::Now() - start_time_,
                   .device = repository_->device(),
                   .adaptation = adaptation_ == nullptr ? AdaptationCounters{}
                                                        : adaptation_->counters(),
                   .audio = audio_stats_.totals()},
                  response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ScorerService::GetAdaptation(grpc::CallbackServerContext* context,
                                                       const v1::GetAdaptationRequest* request,
                                                       v1::GetAdaptationResponse* response) {
  if (absl::Status token = CheckToken(*context); !token.ok()) return Refuse(context, token);
  if (adaptation_ == nullptr) {
    return Refuse(context, absl::UnimplementedError("this server does not run live adaptation"));
  }
  absl::StatusOr<SavedAdaptation> saved = adaptation_->Find(request->name());
  if (!saved.ok()) return Refuse(context, saved.status());
  response->set_method(saved->method);
  *response->mutable_report() = saved->report;
  if (saved->method == v1::AdaptationConfig::FMLLR) {
    v1::AffineTransform* transform = response->mutable_transform();
    transform->set_rows(saved->dim);
    transform->set_cols(saved->dim + 1);
    transform->mutable_values()->Assign(saved->transform.begin(), saved->transform.end());
  } else {
    response->set_model(saved->model);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void ScorerService::Drain() {
  idle_watchdog_.Stop();
  registry_.DrainAll();
}

}  // namespace gmmscore
