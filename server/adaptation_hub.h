// AdaptationHub: what the daemon's adapting streams (StreamConfig.adaptation)
// share: worker threads that gather statistics and estimate off the scoring
// path, the adaptations published under a name (GetAdaptation), the
// repository adapted MAP models are prepared in, and the counters /metrics
// and GetServerStats show.
//
//   AdaptationHub hub(repository, {.workers = 2});
//   hub.Post([work = ...] { ... });              // runs on a worker, FIFO
//   GMM_RETURN_IF_ERROR(hub.Publish("spk7", saved));
//   GMM_ASSIGN_OR_RETURN(SavedAdaptation saved, hub.Find("spk7"));
//
// Bounds: each stream keeps its own backlog bounded (stream_adaptation.h),
// so the queue holds at most a few tasks per live stream; the store keeps
// the max_saved most recently published names (older ones are forgotten, a
// MAP model so published stays served until ModelAdmin unloads it).
//
// Thread safety: all methods are thread-safe. Stop runs the tasks queued
// and joins the workers; Post after Stop runs the task on the caller.
#ifndef GMMSCORE_SERVER_ADAPTATION_HUB_H_
#define GMMSCORE_SERVER_ADAPTATION_HUB_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/train/fmllr_stats.h"
#include "server/model_repository.h"

namespace gmmscore {

struct AdaptationLimits {
  int workers = 2;  // threads gathering statistics and estimating
  int max_saved = 1024;  // names GetAdaptation remembers
  // Answered frames a stream may have waiting for its statistics; beyond
  // it, chunks are skipped (counted in AdaptationReport.skipped_frames).
  int64_t max_backlog_frames = 6000;
  // fMLLR statistics gathered by the backend while it scores, where it can
  // (CUDA: kernels/score/fmllr_gather.h); false: by the workers, from each
  // answered chunk's frames and scores.
  bool gather_on_device = true;
};

// One published update.
struct SavedAdaptation {
  v1::AdaptationConfig::Method method = v1::AdaptationConfig::METHOD_UNSPECIFIED;
  v1::AdaptationReport report;
  int dim = 0;
  std::vector<float> transform;  // FMLLR: dim x (dim + 1)
  std::string model;             // MAP_MEANS: the served name
};

// Cumulative, since the hub started (the "now" one is marked).
struct AdaptationCounters {
  int64_t streams = 0;          // adapting streams started
  int64_t live_streams = 0;     // now
  int64_t gathered_frames = 0;  // frames whose statistics were gathered
  int64_t device_gathered_frames = 0;  // of those, by the backend while scoring
  int64_t skipped_frames = 0;   // dropped because a backlog was full
  int64_t updates = 0;
  int64_t failed_updates = 0;
  int64_t gather_us = 0;        // worker time gathering statistics
  int64_t update_us = 0;        // worker time estimating (and preparing MAP models)
};

class AdaptationHub {
 public:
  // `repository` must outlive the hub (MAP models are prepared and published
  // there).
  AdaptationHub(ModelRepository* repository, const AdaptationLimits& limits);
  ~AdaptationHub();  // Stop()

  AdaptationHub(const AdaptationHub&) = delete;
  AdaptationHub& operator=(const AdaptationHub&) = delete;

  const AdaptationLimits& limits() const { return limits_; }
  ModelRepository* repository() const { return repository_; }

  void Post(absl::AnyInvocable<void() &&> task);
  // Queues `task` and returns true, or returns false (and drops it) once
  // stopped: for a task that re-queues itself, which then carries on itself.
  bool TryPost(absl::AnyInvocable<void() &&>& task);
  void Stop();

  // Remembers `saved` under `name` (replacing what was there), and for
  // MAP_MEANS serves `model` under it (ModelRepository::Publish: its errors,
  // and nothing is remembered then).
  absl::Status Publish(const std::string& name, SavedAdaptation saved,
                       std::shared_ptr<const ServedModel> model);
  // NOT_FOUND naming `name` when nothing was published under it.
  absl::StatusOr<SavedAdaptation> Find(const std::string& name) const;

  // The FmllrAccumulator of `model`, one for all the streams adapting with
  // it (made by the first that asks, kept while any holds it: 200 MB of
  // float64 terms for a 5000 x 32 x 39 model). Call from a worker.
  std::shared_ptr<const FmllrAccumulator> FmllrAccumulatorFor(
      const std::shared_ptr<const DiagGmmModel>& model);

  // The counters, updated by the streams.
  AdaptationCounters counters() const;
  struct Counting {
    std::atomic<int64_t> streams{0}, live_streams{0}, gathered_frames{0}, device_gathered_frames{0}, skipped_frames{0},
        updates{0}, failed_updates{0}, gather_us{0}, update_us{0};
  };
  Counting& counting() { return counting_; }

 private:
  void WorkerMain();

  ModelRepository* const repository_;
  const AdaptationLimits limits_;
  Counting counting_;

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;

  mutable absl::Mutex saved_mu_;
  struct Entry {
    SavedAdaptation saved;
    uint64_t sequence = 0;  // publication order, for eviction
  };
  std::map<std::string, Entry> saved_ ABSL_GUARDED_BY(saved_mu_);

  absl::Mutex accumulators_mu_;  // held while one is made: others of the model wait for it
  std::map<const DiagGmmModel*, std::weak_ptr<const FmllrAccumulator>> accumulators_
      ABSL_GUARDED_BY(accumulators_mu_);
  uint64_t sequence_ ABSL_GUARDED_BY(saved_mu_) = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ADAPTATION_HUB_H_
