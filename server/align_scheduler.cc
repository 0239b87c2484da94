#include "server/align_scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "kernels/core/thread_name.h"

namespace gmmscore {
namespace {

// OK while `job` may still be aligned at `now`; otherwise why not.
absl::Status DeadStatus(const AlignJob& job, absl::Time now) {
  if (now >= job.deadline) {
    return absl::DeadlineExceededError("the RPC's deadline passed before its utterance was aligned");
  }
  if (job.cancelled != nullptr && job.cancelled->load(std::memory_order_acquire)) {
    return absl::CancelledError("the RPC was cancelled before its utterance was aligned");
  }
  return absl::OkStatus();
}

}  // namespace

AlignScheduler::AlignScheduler(AlignSchedulerOptions options) : options_(std::move(options)) {
  const int workers = std::max(1, options_.num_workers);
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] {
      NameCurrentThread("gs-align");
      WorkerLoop();
    });
  }
}

AlignScheduler::~AlignScheduler() { Stop(); }

bool AlignScheduler::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void AlignScheduler::Submit(AlignJob job) {
  std::vector<std::pair<AlignJob, absl::Status>> dead;
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    auto full = [&] {
      return !queue_.empty() && stats_.queued_frames + job.queued_frames > options_.max_queued_frames;
    };
    if (stopping_) {
      refused = absl::UnavailableError("the server is shutting down; align elsewhere or retry later");
    } else {
      // Room held by requests nobody waits for any more is given back first.
      if (full()) TakeDeadLocked(absl::Now(), &dead);
      if (full()) {
        refused = absl::ResourceExhaustedError(absl::StrFormat(
            "the server's align queue is full (%d frames waiting, limit %d: --max_align_queued_frames); "
            "the server is overloaded, retry later or elsewhere",
            stats_.queued_frames, options_.max_queued_frames));
        ++stats_.rejected;
      }
    }
    if (refused.ok()) {
      stats_.queued_frames += job.queued_frames;
      queue_.push_back({std::move(job), absl::Now()});
      work_cv_.Signal();
    } else {
      ++stats_.completed;
    }
  }
  for (auto& [dead_job, status] : dead) dead_job.done(std::move(status));
  if (!refused.ok()) job.done(refused);
}

void AlignScheduler::PurgeDead() {
  std::vector<std::pair<AlignJob, absl::Status>> dead;
  {
    absl::MutexLock lock(&mu_);
    TakeDeadLocked(absl::Now(), &dead);
  }
  for (auto& [job, status] : dead) job.done(std::move(status));
}

void AlignScheduler::TakeDeadLocked(absl::Time now, std::vector<std::pair<AlignJob, absl::Status>>* dead) {
  std::deque<Queued> alive;
  for (Queued& queued : queue_) {
    absl::Status status = DeadStatus(queued.job, now);
    if (status.ok()) {
      alive.push_back(std::move(queued));
      continue;
    }
    stats_.queued_frames -= queued.job.queued_frames;
    ++stats_.completed;
    ++(absl::IsCancelled(status) ? stats_.cancelled : stats_.expired);
    dead->emplace_back(std::move(queued.job), std::move(status));
  }
  queue_.swap(alive);
}

void AlignScheduler::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
  }
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

AlignSchedulerStats AlignScheduler::stats() const {
  absl::MutexLock lock(&mu_);
  AlignSchedulerStats stats = stats_;
  stats.queued = static_cast<int64_t>(queue_.size());
  return stats;
}

bool AlignScheduler::TakeBatchLocked(absl::Time now, Batch* batch, absl::Time* wake) {
  *wake = absl::InfiniteFuture();
  for (const Queued& oldest : queue_) {
    const ModelAligner* aligner = oldest.job.aligner.get();
    if (busy_.contains(aligner)) continue;
    const int64_t waiting = std::count_if(queue_.begin(), queue_.end(),
                                          [&](const Queued& q) { return q.job.aligner.get() == aligner; });
    const absl::Time due = oldest.enqueued + options_.max_queue_delay;
    if (!stopping_ && waiting < options_.max_batch && now < due) {
      *wake = std::min(*wake, due);
      continue;
    }
    // The model's requests, oldest first, up to max_batch.
    batch->aligner = oldest.job.aligner;
    std::deque<Queued> rest;
    for (Queued& queued : queue_) {
      if (queued.job.aligner.get() == aligner && static_cast<int>(batch->jobs.size()) < options_.max_batch) {
        stats_.queued_frames -= queued.job.queued_frames;
        batch->jobs.push_back(std::move(queued));
      } else {
        rest.push_back(std::move(queued));
      }
    }
    queue_.swap(rest);
    busy_.insert(aligner);
    ++stats_.running_batches;
    return true;
  }
  return false;
}

void AlignScheduler::WorkerLoop() {
  while (true) {
    Batch batch;
    std::vector<std::pair<AlignJob, absl::Status>> dead;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        const absl::Time now = absl::Now();
        TakeDeadLocked(now, &dead);
        if (!dead.empty()) break;  // complete them without the lock, then look again
        absl::Time wake;
        if (TakeBatchLocked(now, &batch, &wake)) break;
        if (stopping_ && queue_.empty()) return;
        // Wake for the earliest due batch, and for deadlines passing.
        for (const Queued& queued : queue_) wake = std::min(wake, queued.job.deadline);
        work_cv_.WaitWithDeadline(&mu_, wake);
      }
    }
    for (auto& [job, status] : dead) job.done(std::move(status));
    if (batch.aligner != nullptr) RunBatch(std::move(batch));
  }
}

void AlignScheduler::RunBatch(Batch batch) {
  const absl::Time started = absl::Now();
  AlignBatchReport report;
  std::vector<FloatMatrix> computed(batch.jobs.size());
  std::vector<absl::Duration> features_time(batch.jobs.size());
  std::vector<absl::Status> status(batch.jobs.size());
  std::vector<AlignInput> inputs;
  std::vector<size_t> input_job;  // inputs[k] is batch.jobs[input_job[k]]
  for (size_t j = 0; j < batch.jobs.size(); ++j) {
    AlignJob& job = batch.jobs[j].job;
    report.queue_waits.push_back(started - batch.jobs[j].enqueued);
    status[j] = DeadStatus(job, started);
    if (!status[j].ok()) continue;
    ConstMatrixView features;
    if (job.features != nullptr) {
      features = job.features->view();
    } else {
      const absl::Time front_end = absl::Now();
      absl::StatusOr<FloatMatrix> from_audio = batch.aligner->ComputeFeatures(*job.audio, job.utterance);
      features_time[j] = absl::Now() - front_end;
      if (!from_audio.ok()) {
        status[j] = from_audio.status();
        continue;
      }
      computed[j] = *std::move(from_audio);
      features = computed[j].view();
    }
    inputs.push_back({job.utterance, features, job.words});
    input_job.push_back(j);
    report.frames += features.rows;
  }

  const absl::Time align_start = absl::Now();
  std::vector<absl::StatusOr<Alignment>> results;
  if (!inputs.empty()) results = batch.aligner->Align(inputs);
  report.align_time = absl::Now() - align_start;
  report.utterances = static_cast<int64_t>(inputs.size());

  // Every request is either failed already (status) or among the inputs.
  std::vector<absl::StatusOr<AlignOutcome>> outcomes;
  outcomes.reserve(batch.jobs.size());
  for (const absl::Status& s : status) outcomes.emplace_back(s.ok() ? absl::InternalError("not aligned") : s);
  int64_t frames_aligned = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const size_t j = input_job[k];
    if (!results[k].ok()) {
      outcomes[j] = results[k].status();
      continue;
    }
    ++report.aligned;
    frames_aligned += inputs[k].features.rows;
    outcomes[j] = AlignOutcome{.alignment = *std::move(results[k]),
                               .frames = inputs[k].features.rows,
                               .queue_wait = report.queue_waits[j],
                               .features_time = features_time[j],
                               .batch_time = report.align_time,
                               .batch_utterances = static_cast<int>(inputs.size())};
  }
  {
    absl::MutexLock lock(&mu_);
    busy_.erase(batch.aligner.get());
    --stats_.running_batches;
    if (!inputs.empty()) ++stats_.batches;
    stats_.completed += static_cast<int64_t>(batch.jobs.size());
    stats_.aligned += report.aligned;
    stats_.frames_aligned += frames_aligned;
    stats_.max_batch_utterances = std::max(stats_.max_batch_utterances, report.utterances);
    for (const absl::Status& s : status) {
      if (absl::IsCancelled(s)) ++stats_.cancelled;
      if (absl::IsDeadlineExceeded(s)) ++stats_.expired;
    }
    work_cv_.SignalAll();  // the aligner is free for its waiting requests
  }
  if (!inputs.empty() && options_.on_batch) options_.on_batch(report);
  for (size_t j = 0; j < batch.jobs.size(); ++j) batch.jobs[j].job.done(std::move(outcomes[j]));
}

}  // namespace gmmscore
