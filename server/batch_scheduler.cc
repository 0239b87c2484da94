#include "server/batch_scheduler.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/core/thread_name.h"

namespace gmmscore {

BatchScheduler::BatchScheduler(ScoringBackend* backend, BatchSchedulerOptions options)
    : backend_(backend), options_(std::move(options)) {
  int answer_threads = options_.num_answer_threads;
  if (answer_threads <= 0) {
    answer_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  }
  // The pool's workers plus the scheduler worker that calls ParallelFor.
  answer_pool_ = std::make_unique<ThreadPool>(answer_threads - 1, "gs-answer");
  const int workers = std::max(1, options_.num_workers);
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] {
      NameCurrentThread("gs-scheduler");
      WorkerLoop();
    });
  }
  purger_ = std::thread([this] {
    NameCurrentThread("gs-purge");
    PurgeLoop();
  });
}

BatchScheduler::~BatchScheduler() { Stop(); }

int64_t JobFrames(const ScoreJob& job) {
  const int64_t models = job.fusion != nullptr ? static_cast<int64_t>(job.fusion->models.size()) : 1;
  return job.features->rows() * models;
}

namespace {

// Completes `job` with an error, through whichever callback it has.
void Fail(ScoreJob& job, absl::Status status) {
  if (job.fusion != nullptr) {
    job.fused_done(std::move(status));
  } else {
    job.done(std::move(status));
  }
}

// OK while `job` may still be scored at `now`; otherwise why it may not.
absl::Status DeadStatus(const ScoreJob& job, absl::Time now) {
  // The deadline first: gRPC cancels an RPC whose deadline passed, and the
  // deadline is the better reason to report.
  if (now >= job.deadline) {
    return absl::DeadlineExceededError("the RPC's deadline passed before its chunk was scored");
  }
  if (job.cancelled != nullptr && job.cancelled->load(std::memory_order_acquire)) {
    return absl::CancelledError("the RPC was cancelled before its chunk was scored");
  }
  return absl::OkStatus();
}

}  // namespace

void BatchScheduler::Submit(ScoreJob job) {
  std::vector<ScoreJob> jobs;
  jobs.push_back(std::move(job));
  SubmitAll(std::move(jobs));
}

void BatchScheduler::SubmitAll(std::vector<ScoreJob> jobs) {
  if (jobs.empty()) return;
  int64_t frames = 0;
  for (const ScoreJob& job : jobs) frames += JobFrames(job);
  std::vector<std::pair<ScoreJob, absl::Status>> dead;
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    auto full = [&] {
      return !queue_.empty() && queued_frames_ + frames > options_.max_queued_frames;
    };
    const absl::Time now = absl::Now();
    if (stopping_) {
      refused = absl::UnavailableError("the scoring scheduler is shutting down");
    } else {
      // Room held by jobs nobody waits for any more is given back first.
      if (full()) PurgeOrDeferLocked(now, &dead);
      AdmitWaitingLocked();  // what waits goes first, where it fits
      // Behind work already waiting even when this would fit: arrival order.
      if (!waiting_.empty() || full()) {
        if (options_.full_queue_wait > absl::ZeroDuration()) {
          stats_.waited_jobs += static_cast<int64_t>(jobs.size());
          waiting_.push_back({std::move(jobs), frames, now});
          purge_cv_.Signal();  // gs-purge refuses it once it has waited too long
          jobs.clear();
        } else {
          refused = absl::ResourceExhaustedError(absl::StrFormat(
              "the server's scoring queue is full (%d frames waiting, limit %d: "
              "--max_queued_frames); the server is overloaded, retry later or elsewhere",
              queued_frames_, options_.max_queued_frames));
          stats_.rejected_jobs += static_cast<int64_t>(jobs.size());
        }
      }
    }
    if (!refused.ok()) {
      stats_.jobs += static_cast<int64_t>(jobs.size());
    } else if (!jobs.empty()) {
      for (ScoreJob& job : jobs) {
        queued_frames_ += JobFrames(job);
        queue_.push_back({std::move(job), now});
      }
      work_cv_.Signal();
    }
  }
  for (auto& [job, status] : dead) Fail(job, std::move(status));
  if (!refused.ok()) {
    for (ScoreJob& job : jobs) Fail(job, refused);
  }
}

void BatchScheduler::AdmitWaitingLocked() {
  bool admitted = false;
  while (!waiting_.empty()) {
    Waiting& next = waiting_.front();
    const bool fits = queue_.empty() || queued_frames_ + next.frames <= options_.max_queued_frames;
    if (!fits && !stopping_) break;
    for (ScoreJob& job : next.jobs) {
      queued_frames_ += JobFrames(job);
      queue_.push_back({std::move(job), next.arrived});
    }
    waiting_.pop_front();
    admitted = true;
  }
  if (admitted) work_cv_.Signal();
}

void BatchScheduler::TakeExpiredLocked(absl::Time now,
                                       std::vector<std::pair<ScoreJob, absl::Status>>* refused) {
  bool took = false;
  while (!waiting_.empty() && now - waiting_.front().arrived >= options_.full_queue_wait) {
    took = true;
    const absl::Status full = absl::ResourceExhaustedError(absl::StrFormat(
        "the server's scoring queue stayed full for %d ms (%d frames waiting, limit %d: "
        "--max_queued_frames; --queue_full_wait_ms %d); the server is overloaded, retry later "
        "or elsewhere",
        absl::ToInt64Milliseconds(now - waiting_.front().arrived), queued_frames_,
        options_.max_queued_frames, absl::ToInt64Milliseconds(options_.full_queue_wait)));
    for (ScoreJob& job : waiting_.front().jobs) {
      // A job nobody waits for any more says so, not that the queue was full.
      absl::Status status = DeadStatus(job, now);
      if (status.ok()) {
        status = full;
        ++stats_.rejected_jobs;
      } else {
        ++(absl::IsCancelled(status) ? stats_.cancelled_jobs : stats_.expired_jobs);
      }
      ++stats_.jobs;
      refused->emplace_back(std::move(job), std::move(status));
    }
    waiting_.pop_front();
  }
  // What waited behind them may fit now.
  if (took) AdmitWaitingLocked();
}

void BatchScheduler::PurgeDead() {
  std::vector<std::pair<ScoreJob, absl::Status>> dead;
  {
    absl::MutexLock lock(&mu_);
    PurgeOrDeferLocked(absl::Now(), &dead);
    if (!dead.empty()) work_cv_.SignalAll();
  }
  for (auto& [job, status] : dead) Fail(job, std::move(status));
}

std::string BatchScheduler::RunningLocked(absl::Time now) const {
  if (running_since_.empty()) return "no backend call running";
  return absl::StrFormat("%d backend call%s running, the oldest for %d ms", running_since_.size(),
                         running_since_.size() == 1 ? "" : "s",
                         absl::ToInt64Milliseconds(now - *running_since_.begin()));
}

std::string BatchScheduler::OverloadLocked(absl::Time now) const {
  if (!waiting_.empty()) {
    return absl::StrFormat("chunks of admitted streams wait for room in its full queue (%d frames "
                           "queued, limit %d: --max_queued_frames)",
                           queued_frames_, options_.max_queued_frames);
  }
  if (options_.overload_wait <= absl::ZeroDuration() || queue_.empty()) return "";
  const absl::Duration waited = now - queue_.front().enqueued;
  if (waited > options_.overload_wait) {
    return absl::StrFormat("its oldest queued chunk has waited %d ms (limit %d ms: --overload_queue_ms)",
                           absl::ToInt64Milliseconds(waited),
                           absl::ToInt64Milliseconds(options_.overload_wait));
  }
  if (2 * queued_frames_ > options_.max_queued_frames) {
    // How old the queue and the running calls are tells a stalled backend
    // (both old) from a burst that arrived at once (both young).
    return absl::StrFormat(
        "its queue holds %d frames, over half of --max_queued_frames %d (its oldest chunk "
        "queued %d ms ago; %s)",
        queued_frames_, options_.max_queued_frames, absl::ToInt64Milliseconds(waited),
        RunningLocked(now));
  }
  return "";
}

bool BatchScheduler::Overloaded() const {
  absl::MutexLock lock(&mu_);
  return !OverloadLocked(absl::Now()).empty();
}

absl::Status BatchScheduler::AdmitNew() {
  absl::MutexLock lock(&mu_);
  const std::string why = OverloadLocked(absl::Now());
  if (why.empty()) return absl::OkStatus();
  ++stats_.overload_refusals;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the server is overloaded: ", why,
      "; new streams and requests are refused until it catches up (those admitted carry "
      "on), retry later or elsewhere"));
}

void BatchScheduler::PurgeOrDeferLocked(absl::Time now,
                                        std::vector<std::pair<ScoreJob, absl::Status>>* dead) {
  if (now >= next_purge_) {
    TakeDeadLocked(now, dead);
    return;
  }
  if (!purge_pending_) {
    purge_pending_ = true;
    purge_cv_.Signal();
  }
}

void BatchScheduler::PurgeLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    std::vector<std::pair<ScoreJob, absl::Status>> done;
    TakeExpiredLocked(now, &done);
    absl::Time wake = absl::InfiniteFuture();
    if (!waiting_.empty()) wake = waiting_.front().arrived + options_.full_queue_wait;
    if (purge_pending_) {
      if (now >= next_purge_) {
        TakeDeadLocked(now, &done);
      } else {
        wake = std::min(wake, next_purge_);
      }
    }
    if (done.empty()) {
      purge_cv_.WaitWithDeadline(&mu_, wake);
      continue;
    }
    mu_.Unlock();
    for (auto& [job, status] : done) Fail(job, std::move(status));
    // The jobs' callbacks may hold the last reference to a stream: it must
    // go with no scheduler lock held (the stream's lock comes first).
    done.clear();
    mu_.Lock();
  }
}

void BatchScheduler::TakeDeadLocked(absl::Time now,
                                    std::vector<std::pair<ScoreJob, absl::Status>>* dead) {
  const absl::Time start = absl::Now();
  auto is_dead = [&](const Queued& queued) { return !DeadStatus(queued.job, now).ok(); };
  auto kept = std::find_if(queue_.begin(), queue_.end(), is_dead);
  // Compacted in place from the first dead job: a walk that finds none
  // moves nothing.
  for (auto it = kept; it != queue_.end(); ++it) {
    absl::Status status = DeadStatus(it->job, now);
    if (status.ok()) {
      if (kept != it) *kept = std::move(*it);
      ++kept;
      continue;
    }
    queued_frames_ -= JobFrames(it->job);
    ++stats_.jobs;
    ++(absl::IsCancelled(status) ? stats_.cancelled_jobs : stats_.expired_jobs);
    dead->emplace_back(std::move(it->job), std::move(status));
  }
  queue_.erase(kept, queue_.end());
  // Waiting submissions too: a cancelled stream's chunks must not hold it
  // (and their memory) until they would time out.
  for (auto entry = waiting_.begin(); entry != waiting_.end();) {
    auto alive = entry->jobs.begin();
    for (ScoreJob& job : entry->jobs) {
      absl::Status status = DeadStatus(job, now);
      if (status.ok()) {
        if (&*alive != &job) *alive = std::move(job);
        ++alive;
        continue;
      }
      entry->frames -= JobFrames(job);
      ++stats_.jobs;
      ++(absl::IsCancelled(status) ? stats_.cancelled_jobs : stats_.expired_jobs);
      dead->emplace_back(std::move(job), std::move(status));
    }
    entry->jobs.erase(alive, entry->jobs.end());
    entry = entry->jobs.empty() ? waiting_.erase(entry) : std::next(entry);
  }
  AdmitWaitingLocked();
  ++stats_.purge_walks;
  purge_pending_ = false;
  next_purge_ = now + std::max(options_.min_purge_interval, 10 * (absl::Now() - start));
}

void BatchScheduler::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    AdmitWaitingLocked();  // all of it, whatever the bound: Stop scores what was taken
    work_cv_.SignalAll();
    purge_cv_.SignalAll();
  }
  if (purger_.joinable()) purger_.join();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

BatchSchedulerStats BatchScheduler::stats() const {
  absl::MutexLock lock(&mu_);
  BatchSchedulerStats stats = stats_;
  stats.queued_jobs = static_cast<int64_t>(queue_.size());
  stats.running_groups = static_cast<int64_t>(running_since_.size());
  stats.queued_frames = queued_frames_;
  for (const Waiting& entry : waiting_) {
    stats.waiting_jobs += static_cast<int64_t>(entry.jobs.size());
    stats.waiting_frames += entry.frames;
  }
  return stats;
}

bool BatchScheduler::ShouldDispatchLocked(absl::Time now, absl::Time* deadline) const {
  *deadline = absl::InfiniteFuture();
  if (queue_.empty()) return false;
  const bool backend_idle = running_since_.empty() && ready_.empty();
  if (stopping_ || backend_idle || queued_frames_ >= options_.max_batch_frames) return true;
  *deadline = queue_.front().enqueued + options_.max_queue_delay;
  return now >= *deadline;
}

void BatchScheduler::DispatchLocked() {
  const absl::Time now = absl::Now();
  int64_t frames = 0;
  struct Building {
    DispatchedGroup group;
    int64_t frames = 0;
    int64_t cap = 0;
    bool first_of_model = false;  // the model's first group of this dispatch
  };
  std::vector<Building> groups;
  while (!queue_.empty()) {
    const int64_t job_frames = JobFrames(queue_.front().job);
    if (frames > 0 && frames + job_frames > options_.max_batch_frames) break;
    ScoreJob job = std::move(queue_.front().job);
    const absl::Duration waited = now - queue_.front().enqueued;
    stats_.queue_wait += waited;
    queue_.pop_front();
    frames += job_frames;
    queued_frames_ -= job_frames;
    // A model with its own cap may need several calls for one dispatch.
    auto has_room = [&](const Building& g) {
      return g.group.jobs.front().model == job.model &&
             (g.frames == 0 || g.frames + job_frames <= g.cap);
    };
    auto it = std::find_if(groups.begin(), groups.end(), has_room);
    if (it == groups.end()) {
      const bool model_seen = std::any_of(groups.begin(), groups.end(), [&](const Building& g) {
        return g.group.jobs.front().model == job.model;
      });
      groups.emplace_back();
      it = groups.end() - 1;
      it->first_of_model = !model_seen;
      it->cap = job.max_batch_frames > 0
                    ? std::min(job.max_batch_frames, options_.max_batch_frames)
                    : options_.max_batch_frames;
      it->group.dispatched = now;
    }
    it->frames += job_frames;
    it->group.jobs.push_back(std::move(job));
    it->group.queue_waits.push_back(waited);
  }
  AdmitWaitingLocked();  // into the room just made
  ++stats_.dispatches;
  // One backend call for the first group of every model, its windows in
  // runs by model: on CUDA that is one copy in, one multi-model launch and
  // one copy out for the whole dispatch (ScoringBackend::ScoreBatch), where
  // a call per model cost each model its own launch and synchronisation
  // (10 speaker-cluster models: 10 calls per dispatch). Groups that a
  // model's own cap split off run as calls of their own.
  DispatchedGroup combined;
  combined.dispatched = now;
  for (Building& building : groups) {
    if (!building.first_of_model) continue;
    for (size_t j = 0; j < building.group.jobs.size(); ++j) {
      combined.jobs.push_back(std::move(building.group.jobs[j]));
      combined.queue_waits.push_back(building.group.queue_waits[j]);
    }
  }
  if (!combined.jobs.empty()) ready_.push_back(std::move(combined));
  for (Building& building : groups) {
    if (!building.first_of_model) ready_.push_back(std::move(building.group));
  }
  work_cv_.SignalAll();
}

void BatchScheduler::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (!ready_.empty()) {
      DispatchedGroup group = std::move(ready_.front());
      const absl::Time started = absl::Now();
      stats_.worker_wait += (started - group.dispatched) * group.jobs.size();
      ready_.pop_front();
      const RunningSince::iterator running = running_since_.insert(started);
      mu_.Unlock();
      RunGroup(std::move(group), running);  // takes `running` out of running_since_ itself
      mu_.Lock();
      continue;
    }
    absl::Time deadline;
    if (ShouldDispatchLocked(absl::Now(), &deadline)) {
      DispatchLocked();
      continue;
    }
    if (stopping_ && queue_.empty()) return;
    work_cv_.WaitWithDeadline(&mu_, deadline);
  }
}

absl::Status BatchScheduler::ScoreGroup(const Group& jobs, std::vector<Outcome>* outcomes,
                                        GroupTimes* times) {
  const absl::Time start = absl::Now();
  outcomes->clear();
  outcomes->resize(jobs.size());
  // Every (job, model) window, then laid out in runs by model (in order of
  // first appearance, arrival order within a run): the backend scores a run
  // as one long window. The backend packs the frames (CUDA: into its pinned
  // buffer, transforms applied on the device).
  struct Source {
    size_t job;
    int model;  // index in the job's fusion, or -1 for a plain job
    const PreparedModel* prepared;
    size_t run = 0;  // the prepared model's place in model_order
  };
  std::vector<Source> sources;
  std::vector<const PreparedModel*> model_order;
  bool any_fusion = false;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ScoreJob& job = jobs[j];
    if (job.fusion == nullptr) {
      sources.push_back({j, -1, job.model.get()});
      continue;
    }
    any_fusion = true;
    Outcome& outcome = (*outcomes)[j];
    outcome.fused.emplace();
    outcome.fused->models.resize(job.fusion->models.size());
    outcome.fused->state.emplace(job.fusion->state);  // this attempt's copy
    for (size_t m = 0; m < job.fusion->models.size(); ++m) {
      sources.push_back({j, static_cast<int>(m), job.fusion->models[m].get()});
    }
  }
  for (Source& source : sources) {
    auto it = std::find(model_order.begin(), model_order.end(), source.prepared);
    source.run = static_cast<size_t>(it - model_order.begin());
    if (it == model_order.end()) model_order.push_back(source.prepared);
  }
  std::stable_sort(sources.begin(), sources.end(),
                   [](const Source& a, const Source& b) { return a.run < b.run; });
  std::vector<ScoreWindow> windows;
  windows.reserve(sources.size());
  std::vector<FusionJob> fusions;
  std::vector<int> fusion_of_job(jobs.size(), -1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].fusion == nullptr) continue;
    fusion_of_job[j] = static_cast<int>(fusions.size());
    Outcome& outcome = (*outcomes)[j];
    fusions.push_back({.windows = std::vector<int>(jobs[j].fusion->models.size()),
                       .fusion = &*outcome.fused->state,
                       .out = &outcome.fused->fused,
                       .model_scores = jobs[j].fusion->model_scores,
                       .frame_totals = jobs[j].fusion->frame_totals});
  }
  for (const Source& source : sources) {
    const ScoreJob& job = jobs[source.job];
    Outcome& outcome = (*outcomes)[source.job];
    ScoreResult* result = &outcome.result;
    Precision precision = job.precision;
    StateSelection select = job.select;
    bool half_from_best = job.half_from_best;
    if (source.model >= 0) {
      select = {};
      half_from_best = false;
      result = &outcome.fused->models[source.model];
      precision = job.fusion->precisions[source.model];
      fusions[fusion_of_job[source.job]].windows[source.model] = static_cast<int>(windows.size());
    }
    const bool gathers = job.gather != nullptr &&
                         (source.model < 0 || source.model == job.gather_model);
    windows.push_back({.model = source.prepared,
                       .features = job.features->view(),
                       .result = result,
                       .transform = job.transform.get(),
                       .precision = precision,
                       .select = select,
                       .gather = gathers ? job.gather.get() : nullptr,
                       .gather_segment = job.gather_segment,
                       .half_from_best = half_from_best});
  }
  const absl::Time prepared = absl::Now();
  times->pack += prepared - start;
  absl::Status status = any_fusion ? backend_->ScoreFusedBatch(windows, fusions, ScoreOptions{})
                                   : backend_->ScoreBatch(windows, ScoreOptions{});
  times->score += absl::Now() - prepared;
  return status;
}

absl::Duration BatchScheduler::CompleteAll(std::vector<ScoreJob>& jobs, std::vector<Outcome>& outcomes) {
  // Jobs of one stream may complete out of order here: a stream answers its
  // chunks in order whatever order its jobs finish in (stream_score_session.h).
  std::atomic<int64_t> nanos{0};
  answer_pool_->ParallelFor(static_cast<int64_t>(jobs.size()), [&](int64_t j) {
    const absl::Time start = absl::Now();
    Outcome& outcome = outcomes[j];
    if (!outcome.status.ok()) {
      Fail(jobs[j], std::move(outcome.status));
    } else if (jobs[j].fusion != nullptr) {
      jobs[j].fused_done(*std::move(outcome.fused));
    } else {
      jobs[j].done(std::move(outcome.result));
    }
    nanos.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start), std::memory_order_relaxed);
  });
  return absl::Nanoseconds(nanos.load());
}

void BatchScheduler::RunGroup(DispatchedGroup dispatched, RunningSince::iterator running) {
  GroupTimes times;
  // Every job leaves with an outcome; the callbacks run after the backend
  // work, in parallel (CompleteAll).
  std::vector<ScoreJob> finished;
  std::vector<Outcome> outcomes;
  auto finish = [&](ScoreJob job, Outcome outcome) {
    finished.push_back(std::move(job));
    outcomes.push_back(std::move(outcome));
  };
  auto fail = [&](ScoreJob job, absl::Status status) {
    finish(std::move(job), Outcome{.status = std::move(status)});
  };
  Group live;
  GroupReport report;
  int64_t cancelled = 0, expired = 0;
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < dispatched.jobs.size(); ++i) {
    ScoreJob& job = dispatched.jobs[i];
    absl::Status dead = DeadStatus(job, now);
    if (dead.ok()) {
      report.queue_waits.push_back(dispatched.queue_waits[i]);
      live.push_back(std::move(job));
      continue;
    }
    ++(absl::IsCancelled(dead) ? cancelled : expired);
    fail(std::move(job), std::move(dead));
  }
  int64_t frames = 0;
  std::vector<const void*> origins;
  for (const ScoreJob& job : live) {
    frames += JobFrames(job);
    origins.push_back(job.origin != nullptr ? job.origin : &job);
  }
  std::sort(origins.begin(), origins.end());
  origins.erase(std::unique(origins.begin(), origins.end()), origins.end());

  std::vector<Outcome> results;
  const absl::Status status =
      live.empty() ? absl::OkStatus() : ScoreGroup(live, &results, &times);
  if (status.ok() && !live.empty()) {
    report.frames = frames;
    report.jobs = static_cast<int64_t>(live.size());
    report.origins = static_cast<int64_t>(origins.size());
    report.score_time = times.score;
  }
  const int64_t live_jobs = static_cast<int64_t>(live.size());
  absl::Status backend_outcome = status;
  if (status.ok()) {
    for (size_t j = 0; j < live.size(); ++j) finish(std::move(live[j]), std::move(results[j]));
  } else if (live.size() == 1) {
    fail(std::move(live.front()), status);
  } else {
    // Isolate the bad job: each alone, so that only it fails.
    for (ScoreJob& job : live) {
      Group alone;
      alone.push_back(std::move(job));
      std::vector<Outcome> own;
      absl::Status own_status = ScoreGroup(alone, &own, &times);
      if (own_status.ok()) {
        backend_outcome = absl::OkStatus();
        finish(std::move(alone.front()), std::move(own.front()));
      } else {
        fail(std::move(alone.front()), own_status);
      }
    }
  }
  // The backend is free: another worker may dispatch while this one answers.
  {
    absl::MutexLock lock(&mu_);
    running_since_.erase(running);
    work_cv_.SignalAll();
  }
  // Before the answers: a client told of a device's failure must find the
  // device judged when it reconnects.
  if (live_jobs > 0 && options_.on_backend_outcome) options_.on_backend_outcome(backend_outcome);
  times.done = CompleteAll(finished, outcomes);

  // Reported before the lock: on_group may take locks of its own.
  if (report.jobs > 0 && options_.on_group) options_.on_group(report);

  absl::MutexLock lock(&mu_);
  stats_.jobs += live_jobs + cancelled + expired;
  stats_.cancelled_jobs += cancelled;
  stats_.expired_jobs += expired;
  stats_.pack_time += times.pack;
  stats_.score_time += times.score;
  stats_.done_time += times.done;
  if (live_jobs > 0) {
    ++stats_.group_calls;
    stats_.frames += frames;
    stats_.max_group_jobs = std::max<int64_t>(stats_.max_group_jobs, live_jobs);
    stats_.max_group_frames = std::max(stats_.max_group_frames, frames);
  }
}

}  // namespace gmmscore
