// AlignScheduler: the daemon's queue of forced-alignment requests (the Align
// RPC), batched like scoring: the requests that wait for one model's
// aligner are aligned together, as one ModelAligner::Align call.
//
//   AlignScheduler aligns({.max_batch = 16, .max_queue_delay = absl::Milliseconds(2)});
//   aligns.Submit({.aligner = served->aligner, .utterance = "utt1", .words = words,
//                  .features = frames, .done = [](absl::StatusOr<AlignOutcome> r) { ... }});
//   ...
//   aligns.Stop();  // aligns what is queued, then joins the workers
//
// Dispatch policy: a free worker takes the oldest queued request whose
// aligner is not busy (an aligner aligns one batch at a time) once its
// model has max_batch requests waiting or the oldest has waited
// max_queue_delay (at once after Stop began), together with the model's
// other waiting requests in arrival order, up to max_batch. While a batch
// runs, the model's new requests gather for the next one. Audio is turned
// into features on the worker, before the batch is aligned.
//
// Bounds: at most max_queued_frames frames (features sent, or audio at the
// model's frame rate) wait in the queue; a request beyond it is refused at
// once with RESOURCE_EXHAUSTED (a request is always admitted into an empty
// queue). A request whose `cancelled` flag is set or whose deadline has
// passed is never aligned: it completes with CANCELLED / DEADLINE_EXCEEDED
// when a worker reaches it, or at once through PurgeDead(), which also frees
// its room. After Stop() began, Submit completes with UNAVAILABLE.
//
// Lifetimes: a request holds its aligner (a shared_ptr), so a model
// unloaded or replaced while its requests wait or run keeps its aligner
// until the last of them completes.
//
// Thread safety: all methods are thread-safe. `done` callbacks run on a
// worker (or inside Submit/PurgeDead) with no lock held.
#ifndef GMMSCORE_SERVER_ALIGN_SCHEDULER_H_
#define GMMSCORE_SERVER_ALIGN_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/alignment.h"
#include "kernels/io/wav_reader.h"
#include "server/model_aligner.h"

namespace gmmscore {

// What a completed request receives.
struct AlignOutcome {
  Alignment alignment;
  int64_t frames = 0;           // frames aligned
  absl::Duration queue_wait;    // Submit -> its batch taken by a worker
  absl::Duration features_time; // the front end (audio only)
  absl::Duration batch_time;    // the batch's Align call
  int batch_utterances = 0;     // requests aligned in that call
};

// One utterance to align.
struct AlignJob {
  std::shared_ptr<ModelAligner> aligner;  // non-null
  std::string utterance;                  // for messages
  std::vector<std::string> words;
  // Exactly one of: T x aligner->feature_dim() finite frames (the caller
  // checks) ...
  std::shared_ptr<const FloatMatrix> features;
  // ... or audio at aligner->sample_rate() Hz, turned into features on the
  // worker.
  std::shared_ptr<const PcmAudio> audio;
  // Frames it counts against max_queued_frames: T, or the audio's length
  // in frames.
  int64_t queued_frames = 0;
  // When set and true before its batch starts, the request is not aligned
  // and completes with CANCELLED.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // The RPC's deadline: still queued then, the request completes with
  // DEADLINE_EXCEEDED unaligned.
  absl::Time deadline = absl::InfiniteFuture();
  // Called exactly once, with no scheduler lock held.
  absl::AnyInvocable<void(absl::StatusOr<AlignOutcome>)> done;
};

// One Align call, for metrics (AlignSchedulerOptions::on_batch).
struct AlignBatchReport {
  int64_t utterances = 0;  // in the call
  int64_t frames = 0;      // their frames
  int64_t aligned = 0;     // of them, aligned successfully
  absl::Duration align_time;
  std::vector<absl::Duration> queue_waits;  // per request in it
};

struct AlignSchedulerOptions {
  // Most requests one Align call aligns.
  int max_batch = 16;
  // Longest a request waits for company before its batch starts.
  absl::Duration max_queue_delay = absl::Milliseconds(2);
  // Most frames waiting in the queue (see "Bounds").
  int64_t max_queued_frames = 262144;
  // Threads running Align calls, of different models at once.
  int num_workers = 1;
  // Called after every Align call, on the worker, with no lock held; must
  // be cheap and thread-safe. Empty: none.
  std::function<void(const AlignBatchReport&)> on_batch;
};

// Counters since construction.
struct AlignSchedulerStats {
  int64_t batches = 0;               // Align calls
  int64_t completed = 0;             // requests completed, however
  int64_t aligned = 0;               // requests aligned successfully
  int64_t frames_aligned = 0;        // their frames
  int64_t max_batch_utterances = 0;  // most requests one Align call held
  int64_t rejected = 0;              // refused: the queue was full
  int64_t cancelled = 0;             // dropped unaligned: RPC cancelled
  int64_t expired = 0;               // dropped unaligned: deadline passed
  int64_t queued = 0;                // requests waiting now
  int64_t queued_frames = 0;         // their frames, now
  int64_t running_batches = 0;       // Align calls running now
};

class AlignScheduler {
 public:
  // Starts the workers. INVALID_ARGUMENT-worthy options (below 1) are the
  // caller's to refuse (ValidateDaemonOptions).
  explicit AlignScheduler(AlignSchedulerOptions options);
  // Stop().
  ~AlignScheduler();

  AlignScheduler(const AlignScheduler&) = delete;
  AlignScheduler& operator=(const AlignScheduler&) = delete;

  // Queues `job`, or completes it at once (before returning) with
  // UNAVAILABLE after Stop() began or RESOURCE_EXHAUSTED when the queue is
  // full.
  void Submit(AlignJob job);

  // Completes every queued request that is cancelled or past its deadline.
  void PurgeDead();

  // Aligns what is queued (dead requests complete unaligned), then joins
  // the workers. Idempotent.
  void Stop();
  // Whether Stop() began: Submit refuses with UNAVAILABLE from then on.
  bool stopping() const;

  AlignSchedulerStats stats() const;
  const AlignSchedulerOptions& options() const { return options_; }

 private:
  struct Queued {
    AlignJob job;
    absl::Time enqueued;
  };
  struct Batch {
    std::shared_ptr<ModelAligner> aligner;
    std::vector<Queued> jobs;
  };

  void WorkerLoop();
  // Takes the next batch off queue_ into *batch (true), or says when to
  // look again in *wake (false).
  bool TakeBatchLocked(absl::Time now, Batch* batch, absl::Time* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the queued requests dead at `now` to *dead, with their statuses.
  void TakeDeadLocked(absl::Time now, std::vector<std::pair<AlignJob, absl::Status>>* dead)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Features, Align, completions; no lock held.
  void RunBatch(Batch batch);

  const AlignSchedulerOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // queue_, busy_ or stopping_ changed
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  // Aligners with a batch running.
  absl::flat_hash_set<const ModelAligner*> busy_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  AlignSchedulerStats stats_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;  // serialises Stop()
  std::vector<std::thread> workers_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ALIGN_SCHEDULER_H_
