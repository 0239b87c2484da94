// BatchScheduler: one per scoring backend (one per GPU). It gathers the
// chunks of all live streams, orders them by model and scores each dispatch
// with a single ScoringBackend::ScoreBatch call, which packs the frames into
// one buffer (on CUDA: the backend's pinned buffer, one copy in, the speaker
// transforms applied on the device, one launch over all models' windows for
// short runs, one copy out). A small set of workers issues calls
// concurrently, so that on CUDA the copies in, compute and copies out of
// different calls overlap; the answers are built on a separate pool.
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
// least one job) and makes one group of them, one run per model in order of
// first arrival, each run's jobs in arrival order; a model whose own
// max_batch_frames cap is exceeded gets further groups of its own.
//
// Results are exactly those of scoring each job alone: the backends score
// frames independently and hand every window its own rows. If a
// group call fails, its jobs are retried one by one so that one bad job does
// not fail its neighbours.
//
// Bounds: at most max_queued_frames frames wait in the queue; work that
// would go beyond is refused with RESOURCE_EXHAUSTED (at once, or after
// full_queue_wait: see "Full-queue wait") instead of queueing without
// bound (SubmitAll admits a chunk's jobs together or not at all). Jobs whose `cancelled` flag is set or whose `deadline` has passed
// are never scored: they complete with CANCELLED / DEADLINE_EXCEEDED when a
// worker reaches them, or at once through PurgeDead(), which also frees
// their room in the queue. Finding them means a walk over the queue, so a
// walk (by PurgeDead, or by a Submit that finds the queue full) runs at
// most once per min_purge_interval; one asked for sooner is done by a
// thread of its own (gs-purge) when the interval ends, off the workers, and
// whether or not they are free. Within the interval a full queue refuses
// (or makes wait) new work even if dead jobs hold some of its room. Without that limit an overloaded server
// walked its whole queue, under the lock, for every refused chunk and every
// cancelled stream, and starved its own workers (docs/PERFORMANCE.md,
// "The top_k collapse").
//
// Full-queue wait (with full_queue_wait set): work that finds the queue full
// waits, with the jobs of its submission together and behind any already
// waiting, until room frees, and is refused with RESOURCE_EXHAUSTED only
// once it has waited full_queue_wait. Waiting work joins the queue in
// arrival order as soon as it fits; new work waits behind it even when it
// would fit first. A burst (a fresh device meeting thousands of streams'
// first chunks, a stall of the host) so costs admitted streams latency
// instead of their lives: refused at once, a chunk ends its stream, and on
// a 16-core H200 host one such burst ended 3390 of 10000 admitted streams
// whose later seconds met the SLO (docs/PERFORMANCE.md, stop 51). Sustained
// overload still sheds them, one bound later. Waiting work is bounded by
// what submits it (a stream's max_chunks_in_flight, the server's stream
// count); it is dropped like queued work when dead, and scored by Stop().
// Work refused after its wait completes on gs-purge, one job after
// another.
//
// Overload (with overload_wait set): once the oldest queued job has waited
// overload_wait, or the queue holds over half of max_queued_frames (and,
// whatever overload_wait, while work waits for room in a full queue),
// AdmitNew() refuses new streams and requests (RESOURCE_EXHAUSTED), so that
// those admitted keep their pace, and the other half of the queue for their
// bursts, while it drains. Time alone is not enough: at a GPU's pace
// (10^6 frames/s) the queue fills in a quarter of a second.
//
// Ordering: jobs of one model submitted by one thread are scored in order
// within a group, but completions arrive in any order (a group's callbacks
// run in parallel on the answer threads); streams that need order restore
// it themselves (StreamScoreSession does).
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_BATCH_SCHEDULER_H_
#define GMMSCORE_SERVER_BATCH_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kernels/core/matrix.h"
#include "kernels/core/thread_pool.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/fusion.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// A chunk scored with several models that the backend fuses in the same
// call (ScoringBackend::ScoreFusedBatch): on CUDA the fusion runs on the
// device and only the fused scores come back, not one matrix per model.
struct FusedChunk {
  // Every model fused, in the fusion's order (ScoreJob::model is models[0]),
  // each with its precision.
  std::vector<std::shared_ptr<const PreparedModel>> models;
  std::vector<Precision> precisions;
  // The stream's fusion state before this chunk. Every scoring attempt
  // fuses a copy (FusedChunkResult::state), so a group call that fails and
  // is retried job by job never advances it twice.
  ModelFusion state;
  // Also return each model's own scores (not OutputOptions.fused_only).
  bool model_scores = true;
  // Also return the fused frame totals.
  bool frame_totals = false;
};

// What a fused job's `fused_done` receives.
struct FusedChunkResult {
  std::vector<ScoreResult> models;  // per model: T x S scores, or empty without model_scores
  FusedScores fused;
  std::optional<ModelFusion> state;  // FusedChunk::state advanced by the chunk
};

// One chunk of one stream, to be scored with one model (or, with `fusion`,
// with several models fused).
struct ScoreJob {
  // Prepared by the scheduler's backend.
  std::shared_ptr<const PreparedModel> model;
  // T x D frames, T >= 1, D == model dim, every value finite (the caller
  // validates: a bad job costs its group a retry). Shared by the jobs of one
  // chunk that name different models.
  std::shared_ptr<const FloatMatrix> features;
  // The stream's speaker transform, applied by the backend before scoring
  // (on the device for CUDA); null for none. Its dim() must equal D.
  std::shared_ptr<const FeatureTransform> transform;
  // When set and true at dispatch, the job is not scored and completes with
  // CANCELLED.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // The RPC's deadline: a job still unscored then completes with
  // DEADLINE_EXCEEDED instead (its answer could no longer be delivered).
  absl::Time deadline = absl::InfiniteFuture();
  // Who submitted it (a stream or a request), so that a backend call can
  // report how many streams it served; null counts as its own origin.
  const void* origin = nullptr;
  // This model's own cap on frames per backend call (ModelConfig in the
  // config file); 0: the scheduler's max_batch_frames.
  int64_t max_batch_frames = 0;
  // The model's precision (ScoreWindow::precision).
  Precision precision = Precision::kExact;
  // The states the answer keeps (ScoreWindow::select): `done` may receive
  // them as ScoreResult::sparse (selected by the backend) instead of the
  // loglikes; otherwise the answer selects. Not for a fused chunk (its
  // models' scores are fused whole).
  StateSelection select;
  // The answer sends these scores in half precision (ScoreWindow::
  // half_from_best): `done` may receive them as ScoreResult::half instead
  // of the loglikes. Not for a fused chunk.
  bool half_from_best = false;
  // Called exactly once, on a scheduler, answer or gs-purge thread (or inside
  // Submit: refused, or after Stop), with no scheduler lock held: the job's T x S loglikes and T frame
  // totals, or the error. Must not block for long; may call Submit.
  absl::AnyInvocable<void(absl::StatusOr<ScoreResult>)> done;
  // Set for a fused chunk: `model` is fusion->models[0], the job counts as
  // T frames per model against every frame bound, and `fused_done` is
  // called instead of `done`, under the same rules.
  std::shared_ptr<const FusedChunk> fusion;
  absl::AnyInvocable<void(absl::StatusOr<FusedChunkResult>)> fused_done;
  // A live stream's fMLLR statistics, gathered by the backend from this
  // job's frames (ScoreWindow::gather) under the scores of its model, or
  // with `fusion` of fusion->models[gather_model]. Null: none.
  std::shared_ptr<FmllrGatherTarget> gather;
  int gather_segment = 0;
  int gather_model = 0;
};

// Frames a job puts on the backend: T, or T per model of a fused chunk.
int64_t JobFrames(const ScoreJob& job);

// What one backend call served, for metrics (BatchSchedulerOptions::on_group).
struct GroupReport {
  int64_t frames = 0;   // frames scored in the call
  int64_t jobs = 0;     // jobs (stream chunks, unary requests) in it
  int64_t origins = 0;  // distinct streams / requests among them
  absl::Duration score_time;  // ScoringBackend::Score
  std::vector<absl::Duration> queue_waits;  // per job: Submit -> dispatch
};

struct BatchSchedulerOptions {
  // Frames one dispatch gathers at most (a single larger job is dispatched
  // alone).
  int64_t max_batch_frames = 4096;
  // Longest a job waits for company while the backend is busy.
  absl::Duration max_queue_delay = absl::Microseconds(1000);
  // Threads issuing group calls; also the most group calls in flight.
  int num_workers = 2;
  // Most frames waiting in the queue; beyond it new jobs are refused with
  // RESOURCE_EXHAUSTED. A job is always admitted into an empty queue, so
  // one larger than the bound is not refused for ever.
  int64_t max_queued_frames = 262144;
  // Longest work that finds the queue full waits for room before it is
  // refused (see "Full-queue wait"); zero: refused at once.
  absl::Duration full_queue_wait = absl::ZeroDuration();
  // Shortest time between two walks of the queue for dead jobs (see
  // "Bounds"): an interval of at least ten times the last walk's length,
  // so that walking holds the lock a tenth of the time at most.
  absl::Duration min_purge_interval = absl::Milliseconds(1);
  // AdmitNew() refuses new work while the oldest queued job has waited
  // longer than this, or the queue holds over half of max_queued_frames;
  // zero: never (neither rule).
  absl::Duration overload_wait = absl::ZeroDuration();
  // Called after every successful group call, on the worker thread, with no
  // scheduler lock held; must be cheap and thread-safe. Empty: none.
  std::function<void(const GroupReport&)> on_group;
  // Called once per dispatch that reached the backend, before its jobs
  // complete, on the worker thread with no scheduler lock held: OK when a
  // backend call of it succeeded, else the group call's error (a failed
  // group is retried job by job, so this is an error only when every call
  // failed). The device's health is judged from it
  // (DeviceRouter::ObserveBackend). Must be cheap and thread-safe.
  std::function<void(const absl::Status&)> on_backend_outcome;
  // Threads that run a scored group's `done` callbacks, the worker's own
  // included. The callbacks build the answers (fusion, protobuf copies of
  // T x S floats); run one by one on the worker they cost more than the GPU
  // call itself once a batch holds hundreds of chunks (docs/PERFORMANCE.md,
  // "Capacity (GPU)"). 0: half the machine's cores, at least 1.
  int num_answer_threads = 0;
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
  int64_t queued_frames = 0;     // frames waiting now
  int64_t rejected_jobs = 0;     // refused: the queue was full (for full_queue_wait)
  int64_t waited_jobs = 0;       // waited for room (found it full, or work waiting)
  int64_t waiting_jobs = 0;      // waiting for room now
  int64_t waiting_frames = 0;    // their frames
  int64_t cancelled_jobs = 0;    // dropped unscored: their RPC was cancelled
  int64_t expired_jobs = 0;      // dropped unscored: their deadline had passed
  int64_t purge_walks = 0;       // walks over the queue for dead jobs
  int64_t overload_refusals = 0;  // new streams and requests AdmitNew() refused
  // Where the time went, summed (GetServerStats in scorer.proto defines each).
  absl::Duration queue_wait;   // over jobs: Submit -> dispatch
  absl::Duration worker_wait;  // over jobs: dispatch -> a worker starts the group
  absl::Duration pack_time;    // over group calls: the batch's window list made
  absl::Duration score_time;   // over group calls: ScoringBackend::ScoreBatch (packing incl.)
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

  // Queues `job`. Completes it at once (its `done` called before Submit
  // returns) with UNAVAILABLE after Stop() began, and with RESOURCE_EXHAUSTED
  // when the queue holds max_queued_frames (after dropping dead jobs, if a
  // walk may run: see "Bounds"); with full_queue_wait, it waits for room
  // instead and is refused so only once it has waited that long.
  void Submit(ScoreJob job);
  // Queues all of `jobs` (the models of one chunk) or none of them: they
  // wait for room together, and on refusal each completes with the same
  // status as Submit's.
  void SubmitAll(std::vector<ScoreJob> jobs);

  // Completes every queued job that is cancelled or past its deadline,
  // freeing its room in the queue: now, or within min_purge_interval (see
  // "Bounds"). A stream calls it when its RPC is cancelled. Call with no
  // lock a `done` callback takes.
  void PurgeDead();

  // OK while new streams and requests may come; RESOURCE_EXHAUSTED (counted
  // in overload_refusals) while the device is overloaded (see "Overload").
  // Work of those already admitted is not refused by it (only by
  // max_queued_frames).
  absl::Status AdmitNew();
  // Whether AdmitNew() would refuse now (not counted): the router steers new
  // work to a device that is not.
  bool Overloaded() const;

  // Scores everything queued, then joins the workers. Idempotent.
  void Stop();

  BatchSchedulerStats stats() const;
  const BatchSchedulerOptions& options() const { return options_; }
  // The backend it scores on (for what a stream makes on it: fMLLR
  // gathering targets).
  ScoringBackend* backend() const { return backend_; }

 private:
  using Group = std::vector<ScoreJob>;
  struct DispatchedGroup {
    Group jobs;
    std::vector<absl::Duration> queue_waits;  // parallel to jobs
    absl::Time dispatched;
  };
  // Time spent in the phases of one group call, for stats_.
  struct GroupTimes {
    absl::Duration pack, score, done;
  };

  void WorkerLoop();
  // gs-purge: the walks deferred by PurgeOrDeferLocked, until Stop().
  void PurgeLoop();
  // Why new work is refused now ("" when it is not; see "Overload").
  std::string OverloadLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "N backend calls running, the oldest for T ms", or that none is.
  std::string RunningLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the next batch off queue_ into ready_ (see "Dispatch policy").
  void DispatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a waiting worker should dispatch now; else *deadline is when it
  // should look again (absl::InfiniteFuture() when the queue is empty).
  bool ShouldDispatchLocked(absl::Time now, absl::Time* deadline) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When each group being scored now was taken by its worker: how many
  // run, and, in an overload refusal, for how long the oldest has.
  using RunningSince = std::multiset<absl::Time>;
  // Scores one group (one Score call), takes its entry out of
  // running_since_, then completes its jobs. No lock held.
  void RunGroup(DispatchedGroup group, RunningSince::iterator running);
  // A job's outcome: its status and, when OK, its result (plain or fused).
  struct Outcome {
    absl::Status status;
    ScoreResult result;
    std::optional<FusedChunkResult> fused;
  };
  // Calls the `done` (or `fused_done`) of every jobs[j] with outcomes[j],
  // spread over answer_pool_; returns the callbacks' summed time.
  absl::Duration CompleteAll(std::vector<ScoreJob>& jobs, std::vector<Outcome>& outcomes);
  // Moves the queued jobs that are dead at `now` to *dead, counting them,
  // and sets when the next walk may run (see "Bounds").
  void TakeDeadLocked(absl::Time now, std::vector<std::pair<ScoreJob, absl::Status>>* dead)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves waiting submissions into the queue, oldest first, while the
  // next one fits (see "Full-queue wait").
  void AdmitWaitingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the jobs of submissions that have waited full_queue_wait at `now`
  // to *refused, with RESOURCE_EXHAUSTED, counting them.
  void TakeExpiredLocked(absl::Time now, std::vector<std::pair<ScoreJob, absl::Status>>* refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TakeDeadLocked if a walk may run at `now`; else asks gs-purge for one
  // when it may (purge_pending_).
  void PurgeOrDeferLocked(absl::Time now, std::vector<std::pair<ScoreJob, absl::Status>>* dead)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scores a group with one ScoringBackend call (ScoreFusedBatch when it
  // holds fused chunks, else ScoreBatch), the windows in runs by model;
  // (*outcomes)[j] is jobs[j]'s result (status left OK). Adds to `times`.
  absl::Status ScoreGroup(const Group& jobs, std::vector<Outcome>* outcomes, GroupTimes* times);

  ScoringBackend* const backend_;
  const BatchSchedulerOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // queue_, ready_, running_since_ or stopping_ changed
  absl::CondVar purge_cv_;  // purge_pending_, waiting_ or stopping_ changed
  struct Queued {
    ScoreJob job;
    absl::Time enqueued;
  };
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_frames_ ABSL_GUARDED_BY(mu_) = 0;
  // Submissions that found the queue full, oldest first (see "Full-queue
  // wait"); their jobs join queue_ stamped with `arrived`.
  struct Waiting {
    std::vector<ScoreJob> jobs;
    int64_t frames = 0;
    absl::Time arrived;
  };
  std::deque<Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  std::deque<DispatchedGroup> ready_ ABSL_GUARDED_BY(mu_);  // dispatched, no worker took yet
  RunningSince running_since_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // A walk for dead jobs was asked for before next_purge_ (see "Bounds").
  bool purge_pending_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_purge_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  BatchSchedulerStats stats_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;  // serialises Stop()
  // Runs `done` callbacks beside the worker that scored them; declared
  // before workers_ so that it outlives them.
  std::unique_ptr<ThreadPool> answer_pool_;
  std::vector<std::thread> workers_;
  std::thread purger_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_BATCH_SCHEDULER_H_
