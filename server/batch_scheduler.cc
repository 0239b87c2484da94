#include "server/batch_scheduler.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"

namespace gmmscore {

BatchScheduler::BatchScheduler(ScoringBackend* backend, BatchSchedulerOptions options)
    : backend_(backend), options_(std::move(options)) {
  const int workers = std::max(1, options_.num_workers);
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

BatchScheduler::~BatchScheduler() { Stop(); }

void BatchScheduler::Submit(ScoreJob job) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queued_frames_ += job.features->rows();
      queue_.push_back({std::move(job), absl::Now()});
      work_cv_.Signal();
      return;
    }
    ++stats_.jobs;
  }
  job.done(absl::UnavailableError("the scoring scheduler is shutting down"));
}

void BatchScheduler::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
  }
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

BatchSchedulerStats BatchScheduler::stats() const {
  absl::MutexLock lock(&mu_);
  BatchSchedulerStats stats = stats_;
  stats.queued_jobs = static_cast<int64_t>(queue_.size());
  stats.running_groups = running_groups_;
  return stats;
}

bool BatchScheduler::ShouldDispatchLocked(absl::Time now, absl::Time* deadline) const {
  *deadline = absl::InfiniteFuture();
  if (queue_.empty()) return false;
  const bool backend_idle = running_groups_ == 0 && ready_.empty();
  if (stopping_ || backend_idle || queued_frames_ >= options_.max_batch_frames) return true;
  *deadline = queue_.front().enqueued + options_.max_queue_delay;
  return now >= *deadline;
}

void BatchScheduler::DispatchLocked() {
  const absl::Time now = absl::Now();
  int64_t frames = 0;
  std::vector<Group> groups;
  while (!queue_.empty()) {
    const int64_t job_frames = queue_.front().job.features->rows();
    if (frames > 0 && frames + job_frames > options_.max_batch_frames) break;
    ScoreJob job = std::move(queue_.front().job);
    stats_.queue_wait += now - queue_.front().enqueued;
    queue_.pop_front();
    frames += job_frames;
    queued_frames_ -= job_frames;
    auto same_model = [&](const Group& g) { return g.front().model == job.model; };
    auto it = std::find_if(groups.begin(), groups.end(), same_model);
    if (it == groups.end()) {
      groups.emplace_back();
      it = groups.end() - 1;
    }
    it->push_back(std::move(job));
  }
  ++stats_.dispatches;
  for (Group& group : groups) ready_.push_back({std::move(group), now});
  work_cv_.SignalAll();
}

void BatchScheduler::WorkerLoop() {
  FloatMatrix buffer;  // this worker's packing buffer, reused across groups
  absl::MutexLock lock(&mu_);
  while (true) {
    if (!ready_.empty()) {
      Group group = std::move(ready_.front().jobs);
      stats_.worker_wait += (absl::Now() - ready_.front().dispatched) * group.size();
      ready_.pop_front();
      ++running_groups_;
      mu_.Unlock();
      RunGroup(std::move(group), &buffer);
      mu_.Lock();
      --running_groups_;
      work_cv_.SignalAll();  // the backend may be idle now
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

absl::Status BatchScheduler::ScorePacked(const Group& jobs, FloatMatrix* buffer,
                                         ScoreResult* result, GroupTimes* times) {
  const absl::Time start = absl::Now();
  const DiagGmmModel& model = jobs.front().model->model();
  const int64_t dim = model.dim();
  int64_t frames = 0;
  for (const ScoreJob& job : jobs) {
    if (job.features->cols() != dim) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "features have dimension %d, the model %d", job.features->cols(), dim));
    }
    frames += job.features->rows();
  }
  buffer->Resize(frames, dim);
  int64_t row = 0;
  for (const ScoreJob& job : jobs) {
    if (job.transform != nullptr) {
      job.transform->ApplyUnchecked(job.features->view(), buffer->row(row));
    } else if (job.features->rows() > 0) {
      std::memcpy(buffer->row(row), job.features->data(),
                  sizeof(float) * job.features->rows() * dim);
    }
    row += job.features->rows();
  }
  const absl::Time packed = absl::Now();
  times->pack += packed - start;
  absl::Status status =
      backend_->Score(*jobs.front().model, buffer->view(), ScoreOptions{}, result);
  times->score += absl::Now() - packed;
  return status;
}

void BatchScheduler::RunGroup(Group group, FloatMatrix* buffer) {
  GroupTimes times;
  // Runs a job's callback, timed.
  auto complete = [&times](ScoreJob& job, absl::StatusOr<ScoreResult> outcome) {
    const absl::Time start = absl::Now();
    job.done(std::move(outcome));
    times.done += absl::Now() - start;
  };
  Group live;
  for (ScoreJob& job : group) {
    if (job.cancelled != nullptr && job.cancelled->load(std::memory_order_acquire)) {
      complete(job, absl::CancelledError("the stream was cancelled before its chunk was scored"));
    } else {
      live.push_back(std::move(job));
    }
  }
  const int64_t cancelled = static_cast<int64_t>(group.size() - live.size());
  int64_t frames = 0;
  for (const ScoreJob& job : live) frames += job.features->rows();

  ScoreResult result;
  const absl::Status status =
      live.empty() ? absl::OkStatus() : ScorePacked(live, buffer, &result, &times);
  if (status.ok()) {
    int64_t row = 0;
    for (ScoreJob& job : live) {
      const absl::Time split_start = absl::Now();
      const int64_t rows = job.features->rows();
      ScoreResult own;
      own.loglikes.Resize(rows, result.loglikes.cols());
      std::memcpy(own.loglikes.data(), result.loglikes.row(row),
                  sizeof(float) * rows * result.loglikes.cols());
      if (!result.frame_totals.empty()) {
        own.frame_totals.assign(result.frame_totals.begin() + row,
                                result.frame_totals.begin() + row + rows);
      }
      row += rows;
      times.split += absl::Now() - split_start;
      complete(job, std::move(own));
    }
  } else if (live.size() == 1) {
    complete(live.front(), status);
  } else {
    // Isolate the bad job: each alone, so that only it fails.
    for (ScoreJob& job : live) {
      Group alone;
      alone.push_back(std::move(job));
      ScoreResult own;
      absl::Status own_status = ScorePacked(alone, buffer, &own, &times);
      if (own_status.ok()) {
        complete(alone.front(), std::move(own));
      } else {
        complete(alone.front(), own_status);
      }
    }
  }

  absl::MutexLock lock(&mu_);
  stats_.jobs += static_cast<int64_t>(live.size()) + cancelled;
  stats_.pack_time += times.pack;
  stats_.score_time += times.score;
  stats_.split_time += times.split;
  stats_.done_time += times.done;
  if (!live.empty()) {
    ++stats_.group_calls;
    stats_.frames += frames;
    stats_.max_group_jobs = std::max<int64_t>(stats_.max_group_jobs, live.size());
    stats_.max_group_frames = std::max(stats_.max_group_frames, frames);
  }
}

}  // namespace gmmscore
