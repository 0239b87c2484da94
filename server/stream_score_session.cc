#include "server/stream_score_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "proto/rpc_status.h"
#include "server/answer_encoder.h"
#include "server/client_text.h"
#include "server/log.h"

namespace gmmscore {

StreamScoreSession::StreamScoreSession(const StreamEnvironment& env, StreamCall* call,
                                       std::string peer, absl::Time deadline,
                                       const absl::Status& refused)
    : env_(env), call_(call), peer_(std::move(peer)), deadline_(deadline) {
  if (env_.sessions_alive != nullptr) env_.sessions_alive->fetch_add(1);
  call_->Bind(this);
  Actions actions;
  const bool registered = refused.ok() && env_.registry->Add(this, peer_);
  {
    absl::MutexLock lock(&mu_);
    registered_ = registered;
    if (!refused.ok()) {
      EndLocked(refused);
    } else if (!registered) {
      EndLocked(env_.registry->draining()
                    ? absl::UnavailableError("the server is shutting down")
                    : absl::ResourceExhaustedError(
                          "the server is at its limit of live streams; retry later"));
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

StreamScoreSession::~StreamScoreSession() {
  std::shared_ptr<StreamAdaptation> adaptation;
  bool ended_well = false;
  {
    absl::MutexLock lock(&mu_);
    adaptation = adaptation_;
    ended_well = end_status_.has_value() && end_status_->ok();
  }
  // Outside mu_: a stopped hub runs the closing update on this thread.
  if (adaptation != nullptr) adaptation->Close(ended_well);
  if (env_.sessions_alive != nullptr) env_.sessions_alive->fetch_sub(1);
}

void StreamScoreSession::OnReadDone(bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    read_in_flight_ = false;
    if (ok) {
      last_activity_ = absl::Now();
      request_read_at_ = std::chrono::steady_clock::now();
    }
    if (!ok) {
      // Half-close (or a dead call: OnCancel follows): an audio stream's
      // front end gives the frames it held back first, unless nobody will
      // read them.
      absl::Status flushed =
          cancelled_->load(std::memory_order_acquire) ? absl::OkStatus() : FlushAudioLocked(&actions);
      if (!flushed.ok()) LogInfo("stream %s (%s): ending: %s", stream_id_, peer_, flushed.ToString());
      EndLocked(flushed);
    } else if (!finished_) {
      HandleRequestLocked(&actions);
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::HandleRequestLocked(Actions* actions) {
  absl::Status status = request_.status;
  switch (status.ok() ? request_.message.request_case() : v1::StreamScoreRequest::kConfig) {
    case v1::StreamScoreRequest::kConfig:
      if (status.ok()) status = HandleConfigLocked(request_.message.config());
      break;
    case v1::StreamScoreRequest::kChunk:
      // Over the server's answer memory, a chunk may wait while the stream's
      // earlier answers, which will free some, are still to be taken.
      charge_may_wait_ = !pending_.empty() || write_in_flight_;
      charge_waits_ = false;
      status = HandleChunkLocked(
          request_.message.chunk(),
          request_.message.has_posteriors() ? &request_.message.posteriors() : nullptr, actions);
      charge_may_wait_ = false;
      if (charge_waits_) {
        if (!request_waits_for_memory_ && env_.answer_memory_waits != nullptr) {
          env_.answer_memory_waits->fetch_add(1, std::memory_order_relaxed);
        }
        request_waits_for_memory_ = true;
        return;
      }
      request_waits_for_memory_ = false;
      break;
    case v1::StreamScoreRequest::kAudio:
      status = HandleAudioLocked(request_.message.audio(), request_.message.has_posteriors(), actions);
      break;
    default:
      status = absl::InvalidArgumentError(
          "request carries neither a config nor a chunk; set one of them");
  }
  if (!status.ok()) {
    LogInfo("stream %s (%s): ending: %s", stream_id_, peer_, status.ToString());
    EndLocked(status);
  }
}

absl::Status StreamScoreSession::HandleConfigLocked(const v1::StreamConfig& config) {
  if (plan_.has_value()) {
    return absl::FailedPreconditionError(
        "a second config; a stream carries exactly one config, in its first message");
  }
  if (end_status_.has_value()) return absl::OkStatus();  // draining: ignore
  absl::StatusOr<ScoringPlan> plan = PlanForStream(config, *env_.repository);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<DeviceAssignment> placement = env_.router->Assign(plan->models);
  if (!placement.ok()) return placement.status();
  // An overloaded device takes no new streams; those on it keep their pace.
  if (absl::Status admitted = env_.router->scheduler(placement->device())->AdmitNew(); !admitted.ok()) {
    return admitted;
  }
  plan->device = placement->device();
  if (plan->fusion.has_value()) {
    absl::StatusOr<ModelFusion> fusion = ModelFusion::Create(plan->models.size(), *plan->fusion);
    if (!fusion.ok()) return fusion.status();
    fusion_.emplace(*std::move(fusion));
  }
  // Audio first: a refused audio config must leave no adaptation behind.
  if (config.has_audio()) {
    absl::StatusOr<std::unique_ptr<StreamAudio>> audio =
        StreamAudio::Create(config.audio(), *plan, env_.max_chunk_frames, env_.audio_stats);
    if (!audio.ok()) return audio.status();
    audio_ = *std::move(audio);
  }
  if (config.has_adaptation()) {
    if (env_.adaptation == nullptr) {
      return absl::FailedPreconditionError("this server does not run live adaptation");
    }
    absl::StatusOr<std::shared_ptr<StreamAdaptation>> adaptation = StreamAdaptation::Create(
        config.adaptation(), *plan, env_.adaptation,
        config.stream_id().empty() ? peer_ : ClientText(config.stream_id()),
        env_.router->scheduler(plan->device)->backend());
    if (!adaptation.ok()) return adaptation.status();
    adaptation_ = *std::move(adaptation);
  }
  plan_ = *std::move(plan);
  placement_ = *std::move(placement);
  scheduler_.store(env_.router->scheduler(plan_->device), std::memory_order_release);
  CountStream(*plan_);
  // Only logged: escaped and cut once here (a client's id may hold anything).
  stream_id_ = config.stream_id().empty() ? peer_ : ClientText(config.stream_id());
  return absl::OkStatus();
}

absl::Status StreamScoreSession::HandleChunkLocked(const v1::FeatureMatrix& chunk,
                                                   const v1::ChunkPosteriors* posteriors,
                                                   Actions* actions) {
  if (!plan_.has_value()) {
    return absl::FailedPreconditionError(
        "a chunk before the config; the first message of a stream must be a StreamConfig");
  }
  if (audio_ != nullptr) {
    return absl::InvalidArgumentError(
        "a chunk of features on an audio stream (StreamConfig.audio): send StreamScoreRequest.audio");
  }
  absl::StatusOr<std::shared_ptr<const FloatMatrix>> frames =
      CheckFrames(chunk, *plan_,
                  {.first_frame = next_frame_, .max_frames = env_.max_chunk_frames});
  if (!frames.ok()) return frames.status();
  return HandleFramesLocked(*std::move(frames), posteriors, actions);
}

absl::Status StreamScoreSession::HandleAudioLocked(const v1::AudioChunk& chunk, bool has_posteriors,
                                                   Actions* actions) {
  if (!plan_.has_value()) {
    return absl::FailedPreconditionError(
        "an audio chunk before the config; the first message of a stream must be a StreamConfig");
  }
  if (audio_ == nullptr) {
    return absl::InvalidArgumentError(
        "an audio chunk on a stream of features: set StreamConfig.audio to send audio");
  }
  if (has_posteriors) {
    return absl::InvalidArgumentError(
        "an audio chunk with decoder posteriors: its frames are not known to the client; send features "
        "for supervised adaptation");
  }
  absl::StatusOr<FloatMatrix> frames = audio_->Push(chunk);
  if (!frames.ok()) return frames.status();
  return HandleAudioFramesLocked(*std::move(frames), actions);
}

absl::Status StreamScoreSession::FlushAudioLocked(Actions* actions) {
  if (audio_ == nullptr || audio_->finished() || end_status_.has_value() || !plan_.has_value()) {
    return absl::OkStatus();
  }
  absl::StatusOr<FloatMatrix> frames = audio_->Finish();
  if (!frames.ok()) return frames.status();
  return HandleAudioFramesLocked(*std::move(frames), actions);
}

absl::Status StreamScoreSession::HandleAudioFramesLocked(FloatMatrix frames, Actions* actions) {
  // Pieces of at most --max_chunk_frames frames, each answered as a chunk.
  for (int64_t first = 0; first < frames.rows(); first += env_.max_chunk_frames) {
    const int64_t rows = std::min(env_.max_chunk_frames, frames.rows() - first);
    auto piece = std::make_shared<FloatMatrix>(rows, frames.cols());
    std::copy(frames.row(first), frames.row(first) + rows * frames.cols(), piece->data());
    GMM_RETURN_IF_ERROR(HandleFramesLocked(std::move(piece), nullptr, actions));
  }
  return absl::OkStatus();
}

absl::Status StreamScoreSession::HandleFramesLocked(std::shared_ptr<const FloatMatrix> frames,
                                                    const v1::ChunkPosteriors* posteriors, Actions* actions) {
  std::optional<std::vector<StatsPair>> decoder_pairs;
  if (posteriors != nullptr) {
    if (adaptation_ == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the chunk at frame %d carries posteriors, but the stream does not adapt "
          "(StreamConfig.adaptation)",
          next_frame_));
    }
    absl::StatusOr<std::vector<StatsPair>> pairs =
        adaptation_->DecoderPairs(*posteriors, frames->rows(), next_frame_);
    if (!pairs.ok()) return pairs.status();
    decoder_pairs = *std::move(pairs);
  }
  // A device marked failing gets no more of the stream's chunks, where a
  // healthy peer can take them (before the charge: it asks the device's
  // backend what its results will hold).
  if (env_.router->failing(plan_->device)) MoveOffLocked({plan_->device});
  absl::StatusOr<AnswerCharge> charge = ChargeChunkLocked(frames->rows());
  if (!charge.ok()) return charge.status();
  auto pending = std::make_shared<Chunk>();
  pending->read_at = request_read_at_;
  pending->charge = *std::move(charge);
  pending->retry_frames = frames;
  if (adaptation_ != nullptr) {
    pending->adaptation = adaptation_;
    pending->features = frames;
    pending->gather = adaptation_->Plan(frames->rows(), plan_->device, decoder_pairs.has_value());
    pending->decoder_pairs = std::move(decoder_pairs);
  }
  const int num_models = static_cast<int>(plan_->models.size());
  pending->first_frame = next_frame_;
  pending->frames = frames->rows();
  pending->results.resize(num_models);
  next_frame_ += frames->rows();
  CountFrames(*plan_, frames->rows());
  pending_.push_back(pending);
  if (fusion_.has_value()) {
    pending->remaining = 1;
    const bool in_order = fusion_->options().method == FusionMethod::kPosterior;
    if (in_order && fusion_in_flight_) {
      held_.emplace_back(std::move(pending), std::move(frames));
    } else {
      fusion_in_flight_ = in_order;
      AddJobLocked(MakeFusedJobLocked(std::move(pending), std::move(frames)), actions);
    }
    return absl::OkStatus();
  }
  pending->remaining = num_models;
  const ScoringPlan& scoring = ScoringPlanLocked(pending.get());
  for (int m = 0; m < num_models; ++m) AddJobLocked(MakeModelJobLocked(pending, m, scoring), actions);
  return absl::OkStatus();
}

bool StreamScoreSession::GathersOnLocked(const Chunk& chunk, int device) const {
  return chunk.gather.target != nullptr && chunk.gather.device == device;
}

ScoreJob StreamScoreSession::MakeModelJobLocked(const std::shared_ptr<Chunk>& chunk, int m,
                                                const ScoringPlan& scoring) {
  const bool gathers = adaptation_ != nullptr && m == adaptation_->driving_model() &&
                       GathersOnLocked(*chunk, scoring.device);
  return {.model = ReplicaOf(scoring, m),
          .features = chunk->retry_frames,
          .transform = scoring.transform,
          .cancelled = cancelled_,
          .deadline = deadline_,
          .origin = this,
          .max_batch_frames = scoring.models[m]->max_batch_frames,
          .precision = scoring.models[m]->precision,
          .select = plan_->sparse,
          .half_from_best = WantsHalvesFromBackend(scoring, adaptation_ != nullptr),
          .done = [this, chunk, m, device = scoring.device, gathers,
                   ref = NewRefLocked()](absl::StatusOr<ScoreResult> result) {
            OnScored(chunk, m, device, gathers, std::move(result));
          },
          .gather = gathers ? chunk->gather.target : nullptr,
          .gather_segment = chunk->gather.segment};
}

void StreamScoreSession::AddJobLocked(ScoreJob job, Actions* actions) {
  BatchScheduler* scheduler = env_.router->scheduler(plan_->device);
  if (actions->jobs.empty() || actions->jobs.back().first != scheduler) {
    actions->jobs.emplace_back(scheduler, std::vector<ScoreJob>{});
  }
  actions->jobs.back().second.push_back(std::move(job));
}

bool StreamScoreSession::MoveOffLocked(const std::vector<int>& tried) {
  if (std::find(tried.begin(), tried.end(), plan_->device) == tried.end()) {
    return true;  // another fault already moved it where this work was not tried
  }
  // A MAP adaptation prepares its models on the device the stream started
  // on (StreamAdaptation), now or at any later update.
  if (adaptation_ != nullptr && adaptation_->method() == AdaptationMethod::kMapMeans) return false;
  const int leaving = tried.back();
  absl::StatusOr<DeviceAssignment> moved = env_.router->Move(plan_->models, tried);
  if (!moved.ok()) return false;
  LogWarning("stream %s (%s): moved from device %d (%s) to %d (%s) after a device fault", stream_id_,
             peer_, leaving, env_.router->name(leaving), moved->device(),
             env_.router->name(moved->device()));
  placement_ = *std::move(moved);
  plan_->device = placement_.device();
  adapted_plan_.reset();  // rebuilt for the new device by the next ScoringPlanLocked
  scheduler_.store(env_.router->scheduler(plan_->device), std::memory_order_release);
  return true;
}

bool StreamScoreSession::RetryElsewhereLocked(Chunk& chunk, int device, const absl::Status& status) {
  // A half-closed stream still answers its chunks; a cancelled or draining
  // one (whose schedulers may be stopping: their refusals read UNAVAILABLE)
  // does not try again, nor does a chunk no longer waiting to be answered
  // (an earlier one failed, or the client went away).
  if (!IsDeviceFault(status) || chunk.retry_frames == nullptr || draining_ ||
      cancelled_->load(std::memory_order_acquire) ||
      std::none_of(pending_.begin(), pending_.end(), [&](const auto& p) { return p.get() == &chunk; })) {
    return false;
  }
  if (std::find(chunk.failed_on.begin(), chunk.failed_on.end(), device) == chunk.failed_on.end()) {
    chunk.failed_on.push_back(device);
  }
  // Each retry goes to a device the chunk has not failed on: at most one
  // try per device.
  return MoveOffLocked(chunk.failed_on);
}

absl::StatusOr<AnswerCharge> StreamScoreSession::ChargeChunkLocked(int64_t frames) {
  AnswerCharge charge;
  if (env_.answer_budget == nullptr) return charge;
  // What the results will hold at most: the selected states where the
  // backend selects them, else the dense matrices (ScoredLocked then sets
  // the charge to what they hold).
  const int64_t bytes = HeldBoundBytes(*plan_, frames, BackendSelectsLocked());
  if (bytes > env_.max_stream_answer_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the chunk at frame %d (%d frames x %d states x %d score sets) makes %s of results, "
        "above this server's %s per stream (--stream_answer_memory_mb); send fewer frames per "
        "chunk",
        next_frame_, frames, plan_->num_states, ResultSets(*plan_), FormatBytes(bytes),
        FormatBytes(env_.max_stream_answer_bytes)));
  }
  if (!env_.answer_budget->TryCharge(bytes, unsent_bytes_, &charge,
                                     /*count_refusal=*/!charge_may_wait_)) {
    if (charge_may_wait_) {
      charge_waits_ = true;  // HandleRequestLocked keeps the chunk; no client sees this
      waiting_charge_bytes_ = bytes;
      return absl::ResourceExhaustedError("the chunk waits for answer memory");
    }
    const std::string held = FormatBytes(env_.answer_budget->held());
    LogWarning("stream %s (%s): refused a chunk: the server holds %s of unsent answers",
               stream_id_, peer_, held);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the server holds %s of answers its clients have not yet taken, and the chunk at frame "
        "%d would take it past its limit of %s (--answer_memory_mb); retry later",
        held, next_frame_, FormatBytes(env_.answer_budget->limit())));
  }
  return charge;
}

bool StreamScoreSession::BackendSelectsLocked() const {
  if (plan_->fusion.has_value() || plan_->sparse.top_k <= 0) return false;
  const ScoringBackend* backend = scheduler_.load(std::memory_order_acquire)->backend();
  for (size_t m = 0; m < plan_->models.size(); ++m) {
    if (!backend->ReturnsSelected(*ReplicaOf(*plan_, m), plan_->sparse)) return false;
  }
  return true;
}

const ScoringPlan& StreamScoreSession::ScoringPlanLocked(Chunk* chunk) {
  if (adaptation_ == nullptr) return *plan_;
  StreamAdaptation::Current now = adaptation_->Now();
  if (!adapted_plan_.has_value() || now.report.version() != adapted_version_) {
    adapted_plan_ = *plan_;
    if (now.transform != nullptr) adapted_plan_->transform = now.transform;
    if (now.model != nullptr) adapted_plan_->models[adaptation_->driving_model()] = now.model;
    adapted_version_ = now.report.version();
  }
  chunk->adaptation_report = std::move(now.report);
  return *adapted_plan_;
}

ScoreJob StreamScoreSession::MakeFusedJobLocked(std::shared_ptr<Chunk> chunk,
                                               std::shared_ptr<const FloatMatrix> frames) {
  const ScoringPlan& scoring = ScoringPlanLocked(chunk.get());
  const bool gathers = GathersOnLocked(*chunk, scoring.device);
  return {.model = ReplicaOf(scoring, 0),
          .features = std::move(frames),
          .transform = scoring.transform,
          .cancelled = cancelled_,
          .deadline = deadline_,
          .origin = this,
          .max_batch_frames = SmallestBatchCap(scoring),
          .fusion = FusedChunkFor(scoring, *fusion_),
          .fused_done = [this, chunk, device = scoring.device, gathers, ref = NewRefLocked()](
                            absl::StatusOr<FusedChunkResult> result) {
            OnFused(chunk, device, gathers, std::move(result));
          },
          .gather = gathers ? chunk->gather.target : nullptr,
          .gather_segment = chunk->gather.segment,
          .gather_model = adaptation_ != nullptr ? adaptation_->driving_model() : 0};
}

void StreamScoreSession::OnFused(const std::shared_ptr<Chunk>& chunk, int device, bool gathered,
                                 absl::StatusOr<FusedChunkResult> result) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (result.ok() && gathered) chunk->gathered = true;
    if (!result.ok() && RetryElsewhereLocked(*chunk, device, result.status())) {
      // Fused again from the same state (a failed job leaves fusion_ as it
      // was); chunks held behind it keep waiting.
      AddJobLocked(MakeFusedJobLocked(chunk, chunk->retry_frames), &actions);
    } else {
      FusedLocked(*chunk, std::move(result), &actions);
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::FusedLocked(Chunk& chunk, absl::StatusOr<FusedChunkResult> result,
                                     Actions* actions) {
  if (result.ok()) {
    chunk.results = std::move(result->models);
    chunk.fused = std::move(result->fused);
    *fusion_ = *std::move(result->state);
  } else {
    chunk.status = result.status();
  }
  if (--chunk.remaining == 0) ScoredLocked(chunk);
  if (!fusion_in_flight_) return;
  fusion_in_flight_ = false;
  // After a failure or a cancellation the held chunks are never answered
  // (pending_ is cleared when the failure reaches its head).
  if (!result.ok() || cancelled_->load(std::memory_order_acquire)) held_.clear();
  if (!held_.empty()) {
    auto [next, frames] = std::move(held_.front());
    held_.pop_front();
    fusion_in_flight_ = true;
    AddJobLocked(MakeFusedJobLocked(std::move(next), std::move(frames)), actions);
  }
}

void StreamScoreSession::OnScored(const std::shared_ptr<Chunk>& chunk, int model, int device,
                                  bool gathered, absl::StatusOr<ScoreResult> result) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (result.ok() && gathered) chunk->gathered = true;
    if (!result.ok() && RetryElsewhereLocked(*chunk, device, result.status())) {
      AddJobLocked(MakeModelJobLocked(chunk, model, ScoringPlanLocked(chunk.get())), &actions);
    } else {
      if (result.ok()) {
        chunk->results[model] = *std::move(result);
      } else if (chunk->status.ok()) {
        chunk->status = result.status();
      }
      if (--chunk->remaining == 0) ScoredLocked(*chunk);
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::ScoredLocked(Chunk& chunk) {
  chunk.scored = absl::Now();
  chunk.retry_frames.reset();  // no job will need them again
  if (!chunk.status.ok()) return;
  // Queued behind an answer being written and another waiting (a client
  // that reads slowly, or not at all): its scores leave the pinned block
  // its backend call shares, which would stay out of the pool (and the
  // other streams' answers copied) for as long as this one waits. At most
  // the two answers ahead keep theirs.
  const auto ahead = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.get() == &chunk; });
  if (write_in_flight_ && ahead != pending_.end() && ahead != pending_.begin()) {
    for (ScoreResult& result : chunk.results) DetachFromBlocks(&result);
  }
  // The charge was the bound made at admission (HeldBoundBytes); from here
  // it is what the results hold: less where the backend made fewer (a beam,
  // ties), more only if the bound was wrong about the backend (it said it
  // selects and came back dense).
  int64_t held = 0;
  for (const ScoreResult& result : chunk.results) held += HeldBytes(result);
  if (chunk.fused.has_value()) held += HeldBytes(*chunk.fused);
  chunk.charge.SetTo(held);
}

void StreamScoreSession::OnWriteDone(bool ok) {
  // Our reference to the answer's bytes goes (gRPC keeps its own while it
  // sends them); the write token is still ours.
  answer_.Clear();
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    // gRPC has the answer now, or it is dropped. Its bytes (the results
    // themselves, for an answer that took them) live until gRPC sends them,
    // as the serialised message's did.
    write_charge_.Release();
    last_activity_ = absl::Now();
    if (ok && env_.send_stats != nullptr) {
      env_.send_stats->Add(send_wait_, last_activity_ - send_started_);
    }
    if (!ok) {
      pending_.clear();
      EndLocked(absl::CancelledError("the client went away while an answer was being sent"));
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::OnCancel() {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    cancelled_->store(true, std::memory_order_release);
    pending_.clear();
    end_status_ = absl::CancelledError("the stream was cancelled");
    actions.purge_scheduler = true;  // free the queue room its chunks held
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::OnDone() {
  bool registered;
  {
    absl::MutexLock lock(&mu_);
    registered = registered_;
  }
  if (registered) env_.registry->Remove(this);
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    cancelled_->store(true, std::memory_order_release);  // nobody will read the answers now
  }
  Unref();  // the RPC's reference: the session may be gone after this
}

void StreamScoreSession::AddHold() {
  absl::MutexLock lock(&mu_);
  ++refs_;
}

void StreamScoreSession::ReleaseHold() { Unref(); }

StreamScoreSession::Ref StreamScoreSession::NewRefLocked() {
  ++refs_;
  return Ref(this);
}

void StreamScoreSession::Unref() {
  bool last;
  {
    absl::MutexLock lock(&mu_);
    last = --refs_ == 0;
  }
  // The one place a session is deleted: the RPC is done (OnDone released
  // its reference) and no job or drain holds one.
  if (last) delete this;
}

void StreamScoreSession::Drain() {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    EndLocked(absl::UnavailableError("the server is shutting down"));
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::EndIfIdle(absl::Time now) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (write_in_flight_ && env_.write_timeout > absl::ZeroDuration() &&
        now - write_started_ >= env_.write_timeout) {
      CancelStalledWriteLocked(now, &actions);
    } else if (env_.idle_timeout > absl::ZeroDuration() && !end_status_.has_value() &&
               pending_.empty() && !write_in_flight_ &&
               now - last_activity_ >= env_.idle_timeout) {
      // (A stream waiting for the server, with chunks pending or an answer
      // being written, is not idle whatever the clock says.)
      LogInfo("stream %s (%s): idle for %s, ending it", stream_id_, peer_,
              absl::FormatDuration(now - last_activity_));
      EndLocked(absl::DeadlineExceededError(absl::StrFormat(
          "the stream was idle: no message for %s (the server's stream idle timeout, "
          "--stream_idle_timeout_s); frames [0, %d) were answered",
          absl::FormatDuration(env_.idle_timeout), answered_frames_)));
    } else {
      return;
    }
    AdvanceLocked(&actions);
  }
  Perform(std::move(actions));
}

void StreamScoreSession::CancelStalledWriteLocked(absl::Time now, Actions* actions) {
  if (cancel_requested_) return;
  cancel_requested_ = true;
  if (env_.stalled_streams != nullptr) env_.stalled_streams->fetch_add(1);
  LogWarning("stream %s (%s): the client has not taken an answer for %s (it stopped reading); "
             "cancelling the stream and dropping %d unanswered chunks",
             stream_id_, peer_, absl::FormatDuration(now - write_started_), pending_.size());
  // Nothing can reach a client that does not read, so the status only
  // matters to our own accounting: the call is cancelled, and its chunks'
  // results are freed now rather than when gRPC gives up on the call.
  EndLocked(absl::DeadlineExceededError(absl::StrFormat(
      "the client did not read its answers for %s (--stream_write_timeout_s)",
      absl::FormatDuration(env_.write_timeout))));
  pending_.clear();
  held_.clear();
  cancelled_->store(true, std::memory_order_release);
  actions->purge_scheduler = true;
  actions->cancel_call = true;
  ++ops_starting_;  // the final status waits until the cancel is with the call
}

void StreamScoreSession::EndLocked(absl::Status status) {
  if (!end_status_.has_value()) end_status_ = std::move(status);
}


void StreamScoreSession::AdvanceLocked(Actions* actions) {
  if (finished_) return;
  // The next answer, if its chunk is complete and the write token is free.
  if (!write_in_flight_ && !pending_.empty() && pending_.front()->remaining == 0) {
    std::shared_ptr<Chunk> head = std::move(pending_.front());
    pending_.pop_front();
    if (head->status.ok()) {
      write_in_flight_ = true;
      ++ops_starting_;
      write_started_ = absl::Now();
      write_charge_ = std::move(head->charge);
      send_wait_ = write_started_ - head->scored;
      answered_frames_ = head->first_frame + head->frames;
      actions->answer = std::move(head);
    } else {
      // Chunks after a failed one cannot be answered in order: end here.
      pending_.clear();
      end_status_ = absl::Status(
          head->status.code(), absl::StrFormat("scoring the chunk at frame %d failed: %s",
                                               head->first_frame, head->status.message()));
    }
  }
  // A chunk waiting for answer memory: tried again once it would fit, or
  // once nothing of the stream's own is left to free memory (then it is
  // refused); never taken once the stream is ending. After the answer step:
  // a chunk before it that failed ends the stream first.
  if (request_waits_for_memory_) {
    const bool own_unanswered = !pending_.empty() || write_in_flight_;
    if (end_status_.has_value()) {
      request_waits_for_memory_ = false;
    } else if (!own_unanswered ||
               env_.answer_budget->held() + waiting_charge_bytes_ <= env_.answer_budget->limit()) {
      HandleRequestLocked(actions);
    }
  }
  // The next read, while there is room for another chunk and the stream's
  // unsent answers are within its share of memory (both push back on the
  // client through HTTP/2 flow control).
  if (!read_in_flight_ && !request_waits_for_memory_ && !end_status_.has_value() &&
      static_cast<int>(pending_.size()) < env_.max_chunks_in_flight &&
      unsent_bytes_->load(std::memory_order_relaxed) < env_.max_stream_answer_bytes) {
    read_in_flight_ = true;
    ++ops_starting_;
    actions->start_read = true;
  }
  // The end, once every answer due was written and no read or write handed
  // out is still on its way to the call (it would reach the call after the
  // final status, perhaps after the call is gone).
  if (end_status_.has_value() && pending_.empty() && !write_in_flight_ && ops_starting_ == 0) {
    finished_ = true;
    absl::Status status = *end_status_;
    if (draining_ && status.code() == absl::StatusCode::kUnavailable) {
      status = absl::UnavailableError(absl::StrFormat(
          "the server is shutting down; frames [0, %d) of this stream were answered; reconnect "
          "to continue",
          answered_frames_));
    }
    actions->finish = ToGrpcStatus(status);
  }
}

absl::Status StreamScoreSession::BuildAnswer(Chunk& chunk) {
  v1::ServerTiming timing;
  if (plan_->server_timing) {
    // Held on the steady clock; the read's wall-clock time is now's less
    // that, so that read + held is when encoding began on the wall clock
    // (std::chrono::system_clock: the clock_gettime a client compares with).
    using std::chrono::duration_cast, std::chrono::microseconds;
    const int64_t held_us =
        duration_cast<microseconds>(std::chrono::steady_clock::now() - chunk.read_at).count();
    const int64_t unix_now_us =
        duration_cast<microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    timing.set_chunk_read_unix_us(unix_now_us - held_us);
    timing.set_held_us(held_us);
  }
  const AnswerHeader header{
      .first_frame = static_cast<uint64_t>(chunk.first_frame),
      .adaptation = chunk.adaptation != nullptr ? &chunk.adaptation_report : nullptr,
      .timing = plan_->server_timing ? &timing : nullptr};
  // The answer takes the scores over, unless the adaptation's statistics
  // still need them.
  absl::StatusOr<grpc::ByteBuffer> answer =
      chunk.adaptation != nullptr
          ? EncodeStreamAnswer(*plan_, chunk.results,
                               chunk.fused.has_value() ? &*chunk.fused : nullptr, header)
          : EncodeStreamAnswerTaking(*plan_, std::move(chunk.results), std::move(chunk.fused),
                                     header);
  if (!answer.ok()) return answer.status();
  answer_.Swap(&*answer);  // ByteBuffer has no move; a copy would take references
  return absl::OkStatus();
}

void StreamScoreSession::Perform(Actions actions) {
  // Read before anything below: once SendStatus() is called (here or in the
  // nested Perform) OnDone may run on another thread and delete `this`, so
  // no member may be read after it.
  BatchScheduler* const scheduler = scheduler_.load(std::memory_order_acquire);
  const int starting = (actions.start_read ? 1 : 0) + (actions.answer != nullptr ? 1 : 0) +
                       (actions.cancel_call ? 1 : 0);
  if (actions.cancel_call) call_->Cancel();
  if (actions.start_read) call_->Read(&request_);
  absl::Status built = absl::OkStatus();
  if (actions.answer != nullptr) {
    // plan_ is fixed before any chunk is accepted (but for its device,
    // which a move changes under mu_ and the answer never reads), and
    // answer_ belongs to the holder of the write token: no lock needed here.
    built = BuildAnswer(*actions.answer);
    Chunk& answered = *actions.answer;
    if (built.ok() && answered.adaptation != nullptr) {
      // The answer holds copies now: the scores go on to the statistics,
      // which may keep them a while, off the block their backend call
      // shares.
      DetachFromBlocks(&answered.results[answered.adaptation->driving_model()]);
      answered.adaptation->Gather(std::move(answered.features),
                                  std::move(answered.results[answered.adaptation->driving_model()]),
                                  std::move(answered.decoder_pairs), answered.gather,
                                  answered.gathered);
    }
    if (built.ok()) {
      send_started_ = absl::Now();
      call_->Write(&answer_);
    }
  }
  if (starting > 0) {
    // The read and write are with the call now: a final status held back
    // for them may go (it carries no jobs, so it may go before ours).
    Actions more;
    {
      absl::MutexLock lock(&mu_);
      ops_starting_ -= starting;
      if (!built.ok()) {
        write_in_flight_ = false;
        write_charge_.Release();
        pending_.clear();
        end_status_ = built;
      }
      AdvanceLocked(&more);
    }
    Perform(std::move(more));
  }
  if (actions.finish.has_value()) call_->SendStatus(*std::move(actions.finish));
  // Last: the scheduler may complete jobs inside these calls (a full queue
  // refuses at once without a full-queue wait, a purge drops them), and a completion may finish the
  // stream and let it be deleted, so nothing may touch `this` after them.
  // Jobs exist only once the plan (and its scheduler) does.
  for (auto& [to, jobs] : actions.jobs) to->SubmitAll(std::move(jobs));
  if (actions.purge_scheduler && scheduler != nullptr) scheduler->PurgeDead();
}

}  // namespace gmmscore
