#include "server/stream_adaptation.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "kernels/score/fmllr_gather.h"
#include "kernels/train/fmllr_stats.h"
#include "server/client_text.h"
#include "server/log.h"

namespace gmmscore {
namespace {

constexpr int64_t kDefaultStartFrames = 300;
constexpr int64_t kDefaultEveryFrames = 500;
constexpr double kDefaultMapTau = 10.0;
constexpr double kDefaultFmllrMinCount = 50.0;
// Kaldi's defaults put the full transform at 10x the minimum count (500 vs 50).
constexpr double kFullCountFactor = 10.0;
constexpr uint64_t kMaxFrames = uint64_t{1} << 40;

absl::StatusOr<OnlineAdaptationOptions> OptionsOf(const v1::AdaptationConfig& config,
                                                  bool has_transform) {
  OnlineAdaptationOptions options;
  switch (config.method()) {
    case v1::AdaptationConfig::FMLLR:
      options.method = AdaptationMethod::kFmllr;
      if (has_transform) {
        return absl::InvalidArgumentError(
            "adaptation: FMLLR estimates the stream's transform; do not send "
            "StreamConfig.transform with it (use MAP_MEANS to adapt on top of a transform)");
      }
      break;
    case v1::AdaptationConfig::MAP_MEANS:
      options.method = AdaptationMethod::kMapMeans;
      break;
    default:
      return absl::InvalidArgumentError(
          "adaptation.method must be FMLLR or MAP_MEANS");
  }
  if (config.start_after_frames() > kMaxFrames || config.update_every_frames() > kMaxFrames) {
    return absl::InvalidArgumentError("adaptation: start_after_frames and update_every_frames "
                                      "must be below 2^40");
  }
  options.start_after_frames = config.start_after_frames() > 0
                                   ? static_cast<int64_t>(config.start_after_frames())
                                   : kDefaultStartFrames;
  options.update_every_frames = config.single_update() ? 0
                                : config.update_every_frames() > 0
                                    ? static_cast<int64_t>(config.update_every_frames())
                                    : kDefaultEveryFrames;
  options.map_tau = config.map_tau() != 0.0 ? config.map_tau() : kDefaultMapTau;
  options.fmllr.min_count =
      config.fmllr_min_count() != 0.0 ? config.fmllr_min_count() : kDefaultFmllrMinCount;
  options.fmllr.min_count_full = kFullCountFactor * options.fmllr.min_count;
  for (uint32_t s : config.silence_states()) {
    options.posteriors.silence_states.push_back(
        static_cast<int32_t>(std::min<uint32_t>(s, INT32_MAX)));
  }
  options.posteriors.silence_threshold = config.silence_threshold();
  return options;
}

absl::Status WithField(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("adaptation: ", status.message()));
}

}  // namespace

absl::StatusOr<std::shared_ptr<StreamAdaptation>> StreamAdaptation::Create(
    const v1::AdaptationConfig& config, const ScoringPlan& plan, AdaptationHub* hub,
    std::string label, ScoringBackend* backend) {
  absl::StatusOr<OnlineAdaptationOptions> options = OptionsOf(config, plan.transform != nullptr);
  if (!options.ok()) return options.status();
  int driving = 0;
  if (!config.model().empty()) {
    auto it = std::find_if(plan.models.begin(), plan.models.end(),
                           [&](const auto& m) { return m->name == config.model(); });
    if (it == plan.models.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "adaptation.model '%s' is not one of the stream's models", ClientText(config.model())));
    }
    driving = static_cast<int>(it - plan.models.begin());
  }
  const std::shared_ptr<const ServedModel>& base = plan.models[driving];
  if (base->prepared->tied()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "adaptation: '%s' is a tied-mixture (semi-continuous) model; live adaptation needs a "
        "model of its own Gaussians per state",
        base->name));
  }
  if (plan.fused_only && plan.models.size() > 1) {
    return absl::InvalidArgumentError(
        "adaptation needs the driving model's own scores; output.fused_only leaves them out");
  }
  const std::string& save_as = config.save_as();
  if (!save_as.empty() && (save_as[0] == '.' || save_as.find('/') != std::string::npos)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "adaptation.save_as '%s' is not a name (no '/', not starting with '.')",
        ClientText(save_as)));
  }
  if (!save_as.empty() && options->method == AdaptationMethod::kMapMeans) {
    absl::StatusOr<std::shared_ptr<const ServedModel>> served = hub->repository()->Find(save_as);
    if (served.ok() && (*served)->source != "adaptation") {
      return absl::FailedPreconditionError(absl::StrFormat(
          "adaptation.save_as '%s' names a model loaded from %s; choose another name",
          ClientText(save_as), (*served)->source));
    }
  }
  if (absl::Status valid = ValidateOnlineAdaptation(*options, base->model()); !valid.ok()) {
    return WithField(valid);
  }
  std::shared_ptr<FmllrGatherTarget> target;
  if (backend != nullptr && hub->limits().gather_on_device &&
      options->method == AdaptationMethod::kFmllr) {
    absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> made =
        backend->CreateFmllrGather(*ReplicaOf(plan, driving), options->posteriors);
    if (made.ok()) {
      target = *std::move(made);
    } else if (!absl::IsUnimplemented(made.status())) {
      // Not expected (the policy was checked): gathered on the host instead.
      LogWarning("stream %s: fMLLR statistics will be gathered on the host: %s", label,
                 made.status().ToString());
    }
  }
  return std::shared_ptr<StreamAdaptation>(new StreamAdaptation(
      hub, *options, driving, base, plan.device, plan.transform, save_as, std::move(label),
      std::move(target)));
}

StreamAdaptation::StreamAdaptation(AdaptationHub* hub, const OnlineAdaptationOptions& options,
                                   int driving, std::shared_ptr<const ServedModel> base, int device,
                                   std::shared_ptr<const FeatureTransform> input_transform,
                                   std::string save_as, std::string label,
                                   std::shared_ptr<FmllrGatherTarget> target)
    : hub_(hub),
      options_(options),
      driving_(driving),
      base_(std::move(base)),
      device_(device),
      input_transform_(options.method == AdaptationMethod::kMapMeans ? std::move(input_transform)
                                                                     : nullptr),
      save_as_(std::move(save_as)),
      label_(std::move(label)),
      target_(std::move(target)) {
  planned_due_ = options_.start_after_frames;
  hub_->counting().streams.fetch_add(1);
  hub_->counting().live_streams.fetch_add(1);
}

StreamAdaptation::~StreamAdaptation() { hub_->counting().live_streams.fetch_sub(1); }

absl::StatusOr<OnlineAdapter*> StreamAdaptation::Adapter() {
  if (adapter_ == nullptr) {
    const std::shared_ptr<const DiagGmmModel>& model = base_->prepared->shared_model();
    // Gathering on a device, the host accumulator is fetched only if a
    // chunk is gathered here after all (GatherOnHost).
    const bool host_fmllr = options_.method == AdaptationMethod::kFmllr && target_ == nullptr;
    absl::StatusOr<std::unique_ptr<OnlineAdapter>> made = OnlineAdapter::Create(
        model, options_, host_fmllr ? hub_->FmllrAccumulatorFor(model) : nullptr);
    if (!made.ok()) return made.status();
    adapter_ = *std::move(made);
  }
  return adapter_.get();
}

StreamAdaptation::Current StreamAdaptation::Now() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<std::vector<StatsPair>> StreamAdaptation::DecoderPairs(
    const v1::ChunkPosteriors& posteriors, int64_t frames, int64_t first_frame) const {
  auto error = [first_frame](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the posteriors of the chunk at frame %d: %s", first_frame, what));
  };
  const int n = posteriors.frame_size();
  if (posteriors.state_size() != n || posteriors.weight_size() != n) {
    return error(absl::StrFormat("frame, state and weight must be lists of one length (they "
                                 "have %d, %d and %d entries)",
                                 n, posteriors.state_size(), posteriors.weight_size()));
  }
  std::vector<StatsPair> pairs(n);
  for (int i = 0; i < n; ++i) {
    if (posteriors.frame(i) >= frames) {
      return error(absl::StrFormat("entry %d is for frame %d; the chunk has %d frames (0 .. %d)",
                                   i, posteriors.frame(i), frames, frames - 1));
    }
    pairs[i] = {static_cast<int32_t>(posteriors.frame(i)),
                static_cast<int32_t>(std::min<uint32_t>(posteriors.state(i), INT32_MAX)),
                posteriors.weight(i)};
  }
  absl::StatusOr<std::vector<StatsPair>> kept =
      PairsFromDecoder(pairs, frames, base_->prepared->num_states(), options_.posteriors);
  if (!kept.ok()) return error(std::string(kept.status().message()));
  return kept;
}

StreamAdaptation::ChunkGather StreamAdaptation::Plan(int64_t rows, int device,
                                                    bool decoder_pairs) {
  ChunkGather plan;
  if (target_ == nullptr) return plan;
  absl::MutexLock lock(&mu_);
  const int64_t update = planned_update_;
  planned_frames_ += rows;
  plan.frames_end = planned_frames_;
  plan.segment = static_cast<int>(update % FmllrGatherTarget::kSegments);
  if (planned_due_ > 0 && planned_frames_ >= planned_due_) {
    // As OnlineAdapter::Update moves its schedule on.
    plan.ends_update = true;
    ++planned_update_;
    planned_due_ = options_.update_every_frames > 0 ? planned_frames_ + options_.update_every_frames : 0;
  }
  if (!target_failed_ && !target_->poisoned() && !decoder_pairs && device == device_ &&
      update < taken_updates_ + FmllrGatherTarget::kSegments) {
    plan.target = target_;
    plan.device = device_;
  }
  return plan;
}

void StreamAdaptation::Gather(std::shared_ptr<const FloatMatrix> frames, ScoreResult scores,
                              std::optional<std::vector<StatsPair>> decoder_pairs,
                              const ChunkGather& gather, bool gathered) {
  const int64_t rows = frames->rows();
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    Work work{.plan = gather};
    if (gathered) {
      device_frames_[gather.segment] += rows;
      hub_->counting().gathered_frames.fetch_add(rows);
      hub_->counting().device_gathered_frames.fetch_add(rows);
    } else if (backlog_frames_ + rows > hub_->limits().max_backlog_frames) {
      current_.report.set_skipped_frames(current_.report.skipped_frames() + rows);
      hub_->counting().skipped_frames.fetch_add(rows);
    } else {
      work.frames = std::move(frames);
      work.scores = std::move(scores);
      work.decoder_pairs = std::move(decoder_pairs);
      backlog_frames_ += rows;
    }
    // A worker has nothing to do for a chunk without frames, unless an
    // update follows it; such markers merge, so that a backlog of them
    // stays bounded however far the workers are behind.
    if (work.frames == nullptr && !gather.ends_update) return;
    if (work.frames == nullptr && !backlog_.empty() && backlog_.back().frames == nullptr) {
      Work& last = backlog_.back();
      ++last.updates;
      last.plan.frames_end = gather.frames_end;
      return;
    }
    backlog_.push_back(std::move(work));
    if (running_) return;
    running_ = true;
  }
  hub_->Post([self = shared_from_this()] { self->RunBacklog(); });
}

void StreamAdaptation::Close(bool ended_well) {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    final_wanted_ = ended_well && !save_as_.empty();
    if (!final_wanted_) {
      backlog_.clear();
      backlog_frames_ = 0;
    }
    if (running_ || !WorkLeftLocked()) return;
    running_ = true;
  }
  hub_->Post([self = shared_from_this()] { self->RunBacklog(); });
}

bool StreamAdaptation::WorkLeftLocked() const {
  return !backlog_.empty() || (final_wanted_ && !final_done_);
}

// One chunk per task, then the task goes to the back of the hub's queue:
// streams share the workers in turn. Once the hub has stopped, the task
// carries on with the rest itself (no recursion through Post).
void StreamAdaptation::RunBacklog() {
  for (;;) {
    std::optional<Work> work;
    {
      absl::MutexLock lock(&mu_);
      if (!WorkLeftLocked()) {
        running_ = false;
        return;
      }
      if (!backlog_.empty()) {
        work = std::move(backlog_.front());
        backlog_.pop_front();
        if (work->frames != nullptr) backlog_frames_ -= work->frames->rows();
      } else {
        final_done_ = true;
      }
    }
    if (work.has_value()) {
      GatherOne(*std::move(work));
    } else if (target_ != nullptr) {
      FinalDeviceUpdate();
    } else if (adapter_ != nullptr && adapter_->frames() > updated_frames_) {
      UpdateNow();  // the closing update, from every frame gathered
    }
    {
      absl::MutexLock lock(&mu_);
      if (!WorkLeftLocked()) {
        running_ = false;
        return;
      }
    }
    absl::AnyInvocable<void() &&> next = [self = shared_from_this()] { self->RunBacklog(); };
    if (hub_->TryPost(next)) return;
  }
}

void StreamAdaptation::GatherOne(Work work) {
  const bool gathered_here = work.frames != nullptr && GatherOnHost(work);
  if (target_ == nullptr) {
    if (gathered_here && adapter_->UpdateDue()) UpdateNow();
    return;
  }
  absl::StatusOr<OnlineAdapter*> adapter = Adapter();
  if (!adapter.ok()) return;  // not expected: the options were checked by Create
  (*adapter)->AdvanceTo(work.plan.frames_end);
  if (!work.plan.ends_update) return;
  for (int k = 0; k < work.updates; ++k) {
    TakeSegment((work.plan.segment + k) % FmllrGatherTarget::kSegments);
  }
  UpdateNow();
}

bool StreamAdaptation::GatherOnHost(Work& work) {
  const absl::Time start = absl::Now();
  std::vector<StatsPair> pairs;
  if (work.decoder_pairs.has_value()) {
    pairs = *std::move(work.decoder_pairs);
  } else if (work.scores.sparse.has_value()) {
    pairs = PairsFromSparse(*work.scores.sparse, options_.posteriors);
  } else {
    pairs = PairsFromScores(work.scores.loglikes.view(), options_.posteriors);
  }
  FloatMatrix transformed;
  ConstMatrixView frames = work.frames->view();
  if (input_transform_ != nullptr) {
    if (input_transform_->Apply(frames, &transformed).ok()) frames = transformed.view();
  }
  absl::StatusOr<OnlineAdapter*> adapter = Adapter();
  absl::Status gathered = adapter.ok() ? absl::OkStatus() : adapter.status();
  if (gathered.ok() && options_.method == AdaptationMethod::kFmllr &&
      !(*adapter)->has_fmllr_accumulator()) {
    // A device-gathering stream's chunk gathered here after all.
    gathered = (*adapter)->UseFmllrAccumulator(
        hub_->FmllrAccumulatorFor(base_->prepared->shared_model()));
  }
  if (gathered.ok()) gathered = (*adapter)->AddChunk(frames, pairs);
  hub_->counting().gather_us.fetch_add(absl::ToInt64Microseconds(absl::Now() - start));
  if (!gathered.ok()) {
    // Checked before: not expected. The chunk is left out, and said so.
    LogWarning("stream %s: adaptation statistics of a chunk were not gathered: %s", label_,
               gathered.ToString());
    absl::MutexLock lock(&mu_);
    current_.report.set_skipped_frames(current_.report.skipped_frames() + work.frames->rows());
    current_.report.set_last_error(std::string(gathered.message()));
    return false;
  }
  hub_->counting().gathered_frames.fetch_add(work.frames->rows());
  return true;
}

void StreamAdaptation::TakeSegment(int segment) {
  bool failed;
  {
    absl::MutexLock lock(&mu_);
    failed = target_failed_;
  }
  absl::Status read = absl::OkStatus();
  if (!failed) {
    const absl::Time start = absl::Now();
    const int dim = target_->dim();
    std::vector<double> sums(FmllrGatherValues(dim), 0.0);
    read = target_->Take(segment, absl::MakeSpan(sums));
    if (read.ok()) {
      absl::StatusOr<FmllrStats> stats = FmllrStatsFromGathered(dim, sums);
      read = stats.ok() ? adapter_->AddGathered(*stats) : stats.status();
    }
    hub_->counting().gather_us.fetch_add(absl::ToInt64Microseconds(absl::Now() - start));
    if (!read.ok()) {
      LogWarning("stream %s: the device's fMLLR statistics could not be read; the stream's "
                 "later chunks are gathered on the host: %s",
                 label_, read.ToString());
    }
  }
  absl::MutexLock lock(&mu_);
  if (failed || !read.ok()) {
    target_failed_ = true;
    const int64_t lost = device_frames_[segment];
    current_.report.set_skipped_frames(current_.report.skipped_frames() + lost);
    hub_->counting().skipped_frames.fetch_add(lost);
    if (!read.ok()) current_.report.set_last_error(std::string(read.message()));
  }
  device_frames_[segment] = 0;
  ++taken_updates_;
}

void StreamAdaptation::FinalDeviceUpdate() {
  int64_t frames;
  int segment;
  {
    absl::MutexLock lock(&mu_);
    frames = planned_frames_;
    segment = static_cast<int>(planned_update_ % FmllrGatherTarget::kSegments);
  }
  if (frames <= updated_frames_) return;
  absl::StatusOr<OnlineAdapter*> adapter = Adapter();
  if (!adapter.ok()) return;
  (*adapter)->AdvanceTo(frames);
  TakeSegment(segment);
  UpdateNow();  // the closing update, from every frame
}

void StreamAdaptation::UpdateNow() {
  const absl::Time start = absl::Now();
  absl::StatusOr<AdaptationUpdate> update = adapter_->Update();
  std::shared_ptr<const ServedModel> model;
  if (update.ok() && update->model != nullptr) {
    absl::StatusOr<std::shared_ptr<const ServedModel>> prepared = hub_->repository()->PrepareAdapted(
        *base_, update->model,
        absl::StrFormat("%s (adapted for stream %s, v%d)", base_->name, label_, update->version), device_);
    if (prepared.ok()) {
      model = *std::move(prepared);
    } else {
      update = prepared.status();
    }
  }
  hub_->counting().update_us.fetch_add(absl::ToInt64Microseconds(absl::Now() - start));
  if (!update.ok()) {
    hub_->counting().failed_updates.fetch_add(1);
    LogWarning("stream %s: adaptation update failed, keeping the version before: %s", label_,
               update.status().ToString());
    absl::MutexLock lock(&mu_);
    current_.report.set_last_error(std::string(update.status().message()));
    return;
  }
  v1::AdaptationReport report;
  report.set_version(update->version);
  report.set_frames(update->frames);
  report.set_count(update->count);
  report.set_gain_per_frame(update->gain_per_frame);
  report.set_mode(update->mode);
  updated_frames_ = update->frames;
  hub_->counting().updates.fetch_add(1);
  LogInfo("stream %s: adaptation v%d (%s, %s) from %d frames, count %.0f, gain %.3f nats/frame",
          label_, update->version, AdaptationMethodName(update->method), update->mode,
          update->frames, update->count, update->gain_per_frame);
  SavedAdaptation saved;
  if (!save_as_.empty()) {
    saved.method = update->method == AdaptationMethod::kFmllr ? v1::AdaptationConfig::FMLLR
                                                               : v1::AdaptationConfig::MAP_MEANS;
    saved.report = report;
    saved.dim = base_->prepared->dim();
    saved.transform.assign(update->transform_values.begin(), update->transform_values.end());
  }
  {
    // Current before published: whoever sees the publication (a client
    // waiting for it) sees its next chunk scored by it.
    absl::MutexLock lock(&mu_);
    report.set_skipped_frames(current_.report.skipped_frames());
    current_.report = std::move(report);
    if (update->transform != nullptr) current_.transform = update->transform;
    if (model != nullptr) current_.model = model;
  }
  if (save_as_.empty()) return;
  if (absl::Status published = hub_->Publish(save_as_, std::move(saved), std::move(model));
      !published.ok()) {
    absl::MutexLock lock(&mu_);
    current_.report.set_last_error(absl::StrCat("not published: ", published.message()));
  }
}

}  // namespace gmmscore
