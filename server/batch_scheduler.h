// BatchScheduler: one per scoring backend (one per GPU). It gathers the
// chunks of all live streams, groups them by model, concatenates each group's
// frames into one buffer and scores the group with a single
// ScoringBackend::Score call (on CUDA: one fused-kernel launch over all of
// them). A small set of workers issues group calls concurrently, so that on
// CUDA the copies in, compute and copies out of different groups overlap.
//
//   BatchScheduler scheduler(backend.get(), {.max_batch_frames = 4096});
//   scheduler.Submit({.model = prepared, .features = chunk,
//                     .done = [](absl::StatusOr<ScoreResult> r) { ... }});
//
// Dispatch policy: when no group call is running (the backend is idle) a
// free worker dispatches what is queued at once. Otherwise jobs gather until
// they hold max_batch_frames frames or the oldest has waited
// max_queue_delay, whichever comes first, and a free worker dispatches them.
// One dispatch takes jobs oldest first up to max_batch_frames frames (at
// least one job) and makes one group per model, jobs in arrival order.
//
// Results are exactly those of scoring each job alone: the backends score
// frames independently, and the split hands every job its own rows. If a
// group call fails, its jobs are retried one by one so that one bad job does
// not fail its neighbours.
//
// Ordering: jobs of one model submitted by one thread are scored in order
// within a group, but completions of different groups may arrive in any
// order; streams that need order restore it themselves (StreamScoreReactor
// does).
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_BATCH_SCHEDULER_H_
#define GMMSCORE_SERVER_BATCH_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kernels/core/matrix.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// One chunk of one stream, to be scored with one model.
struct ScoreJob {
  // Prepared by the scheduler's backend.
  std::shared_ptr<const PreparedModel> model;
  // T x D frames, T >= 1, D == model dim, every value finite (the caller
  // validates: a bad job costs its group a retry). Shared by the jobs of one
  // chunk that name different models.
  std::shared_ptr<const FloatMatrix> features;
  // Applied to the frames while they are packed; null for none. Its dim()
  // must equal D.
  std::shared_ptr<const FeatureTransform> transform;
  // When set and true at dispatch, the job is not scored and completes with
  // CANCELLED.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // Called exactly once, on a scheduler thread (or inside Submit after
  // Stop), with no scheduler lock held: the job's T x S loglikes and T frame
  // totals, or the error. Must not block for long; may call Submit.
  absl::AnyInvocable<void(absl::StatusOr<ScoreResult>)> done;
};

struct BatchSchedulerOptions {
  // Frames one dispatch gathers at most (a single larger job is dispatched
  // alone).
  int64_t max_batch_frames = 4096;
  // Longest a job waits for company while the backend is busy.
  absl::Duration max_queue_delay = absl::Microseconds(1000);
  // Threads issuing group calls; also the most group calls in flight.
  int num_workers = 2;
};

// Counters since construction, for logs and tests.
struct BatchSchedulerStats {
  int64_t dispatches = 0;        // batches taken from the queue
  int64_t group_calls = 0;       // Score calls made for groups (retries excluded)
  int64_t jobs = 0;              // jobs completed, successfully or not
  int64_t frames = 0;            // frames scored in group calls
  int64_t max_group_jobs = 0;    // most jobs one Score call served
  int64_t max_group_frames = 0;  // most frames one Score call served
  int64_t queued_jobs = 0;       // jobs waiting now
  int64_t running_groups = 0;    // group calls running now
  // Where the time went, summed (GetServerStats in scorer.proto defines each).
  absl::Duration queue_wait;   // over jobs: Submit -> dispatch
  absl::Duration worker_wait;  // over jobs: dispatch -> a worker starts the group
  absl::Duration pack_time;    // over group calls: frames gathered into one buffer
  absl::Duration score_time;   // over group calls: ScoringBackend::Score
  absl::Duration split_time;   // over group calls: each job's rows copied out
  absl::Duration done_time;    // over jobs: their `done` callbacks
};

class BatchScheduler {
 public:
  // `backend` must outlive the scheduler. Starts the workers.
  BatchScheduler(ScoringBackend* backend, BatchSchedulerOptions options);
  // Stop().
  ~BatchScheduler();

  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Queues `job`. After Stop() began, completes it at once with UNAVAILABLE.
  void Submit(ScoreJob job);

  // Scores everything queued, then joins the workers. Idempotent.
  void Stop();

  BatchSchedulerStats stats() const;
  const BatchSchedulerOptions& options() const { return options_; }

 private:
  using Group = std::vector<ScoreJob>;
  struct DispatchedGroup {
    Group jobs;
    absl::Time dispatched;
  };
  // Time spent in the phases of one group call, for stats_.
  struct GroupTimes {
    absl::Duration pack, score, split, done;
  };

  void WorkerLoop();
  // Takes the next batch off queue_ and splits it by model, into ready_.
  void DispatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a waiting worker should dispatch now; else *deadline is when it
  // should look again (absl::InfiniteFuture() when the queue is empty).
  bool ShouldDispatchLocked(absl::Time now, absl::Time* deadline) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scores one group (one Score call), completes its jobs. No lock held.
  void RunGroup(Group group, FloatMatrix* buffer);
  // Scores `jobs` (same model) in one call into *result; adds to `times`.
  absl::Status ScorePacked(const Group& jobs, FloatMatrix* buffer, ScoreResult* result,
                           GroupTimes* times);

  ScoringBackend* const backend_;
  const BatchSchedulerOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // queue_, ready_, running_groups_ or stopping_ changed
  struct Queued {
    ScoreJob job;
    absl::Time enqueued;
  };
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_frames_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<DispatchedGroup> ready_ ABSL_GUARDED_BY(mu_);  // dispatched, no worker took yet
  int64_t running_groups_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  BatchSchedulerStats stats_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;  // serialises Stop()
  std::vector<std::thread> workers_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_BATCH_SCHEDULER_H_
