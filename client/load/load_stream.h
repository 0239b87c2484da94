// LoadStream: one StreamScore stream of a load test, over a LoadCall (gRPC's
// completion-queue or callback API, load_call.h; no thread of its own). It sends the config, then chunks of features,
// either on a real-time schedule kept by a Pacer (chunk k is due at
// first_due + k * period) or as fast as the server answers (up to
// max_outstanding chunks unanswered), records when each chunk was due, sent
// and answered, hands sampled answers to an AnswerVerifier, and half-closes
// at the stop time or after max_chunks.
//
//   LoadStream stream(plan, &features, &pacer, verifier, [&] { ...one more done... });
//   stream.Start(channel.get(), queues.queue(i));  // or nullptr: the callback API
//   stream.StopAt(end_ns);
//   ... wait for the done callback ...
//   const std::vector<ChunkRecord>& records = stream.records();
//
// Lifetime: the object must stay alive until its done callback has run
// (the callback is its last act). Real-time streams hold the call open
// (LoadCall::AddHold) while pacer ticks may still write, so their pacer must
// run until then.
//
// Thread safety: StopAt, Cancel and SnapshotRecords from any thread;
// records(), status() and the counters only after the done callback.
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_STREAM_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_STREAM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/load/answer_verifier.h"
#include "client/load/audio_source.h"
#include "client/load/feature_source.h"
#include "client/load/lazy_answer.h"
#include "client/load/load_call.h"
#include "client/load/load_stats.h"
#include "client/load/pacer.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/codegen/channel_interface.h"

namespace gmmscore::load {

struct StreamPlan {
  int index = 0;  // the stream's number in its run: its features and samples
  const v1::StreamConfig* config = nullptr;  // outlives the stream
  int chunk_frames = 10;
  bool realtime = true;
  // As fast as possible: chunks sent but not yet answered, at most.
  int max_outstanding = 1;
  // Real time: when chunk 0 is due. As fast as possible: ignored (the first
  // chunk goes once the config is written).
  int64_t first_due_ns = 0;
  // Real time: one chunk's duration (chunk_frames * 10 ms).
  int64_t period_ns = 100'000'000;
  // Chunks to send, then half-close; 0: until the stop time.
  int64_t max_chunks = 0;
  // An audio stream (config->audio set): chunk k is the chunk_frames *
  // samples_per_frame samples of its frames, from `audio` (outlives the
  // stream). Its answers are matched to chunks in order: each chunk must
  // complete one answer's frames (chunk_frames above the front end's
  // lookahead and window; gmmscore-load asks for >= 8).
  const AudioSource* audio = nullptr;
  int samples_per_frame = 160;
};

class LoadStream final : public LoadCallEvents {
 public:
  // `features` and `pacer` must outlive the stream; `verifier` may be null.
  LoadStream(const StreamPlan& plan, const FeatureSource* features, Pacer* pacer,
             AnswerVerifier* verifier, std::function<void()> on_done);

  LoadStream(const LoadStream&) = delete;
  LoadStream& operator=(const LoadStream&) = delete;

  // Opens the call on `channel` (which must outlive it), writes the config
  // and starts sending. On `queue` (a LoadQueues queue, which must outlive
  // the call) the call runs on the completion-queue API; with nullptr on the
  // callback API. Answers are read as LazyStreamAnswer: only the sampled
  // ones are parsed.
  void Start(grpc::ChannelInterface* channel, grpc::CompletionQueue* queue);
  // No chunk due at or after `stop_ns` is sent; the stream half-closes
  // instead and ends when the server has answered the rest. May move the
  // stop earlier or later while the stream runs.
  void StopAt(int64_t stop_ns) { stop_ns_.store(stop_ns, std::memory_order_relaxed); }
  // After Start: cancels the call (it ends with CANCELLED unless it ended
  // already).
  void Cancel() {
    if (call_ != nullptr) call_->Cancel();
  }

  // A copy of the records so far (chunk k at index k).
  std::vector<ChunkRecord> SnapshotRecords() const;

  // After the done callback:
  const std::vector<ChunkRecord>& records() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return records_;
  }
  const grpc::Status& status() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return status_; }
  // Answers that matched no chunk waiting for one (wrong first_frame, a
  // second answer): a server bug, never expected.
  int64_t unexpected_answers() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return unexpected_answers_;
  }

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  // What to do once mu_ is released.
  struct Actions {
    bool write = false;        // request_ holds the next chunk
    bool writes_done = false;  // half-close
  };

  // Real time: chunk k is due now (a pacer task, outside any reaction).
  void Tick(int64_t k);
  // Puts the next waiting chunk in request_ if the write token is free
  // (real time), or makes a new chunk (as fast as possible); half-closes when
  // there is nothing more to send.
  void NextWriteLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the write token for chunk k.
  void WriteChunkLocked(int64_t k, Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StoppingLocked(int64_t next_due_ns) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(const Actions& actions);

  const StreamPlan plan_;
  const FeatureSource* const features_;
  Pacer* const pacer_;
  AnswerVerifier* const verifier_;
  const std::function<void()> on_done_;

  std::unique_ptr<LoadCall> call_;  // set by Start
  v1::StreamScoreRequest config_request_;  // the first write
  v1::StreamScoreRequest request_;         // the chunk write in flight (write token's)
  LazyStreamAnswer response_;              // the read in flight
  std::atomic<int64_t> stop_ns_{std::numeric_limits<int64_t>::max()};

  mutable absl::Mutex mu_;
  std::vector<ChunkRecord> records_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> waiting_ ABSL_GUARDED_BY(mu_);  // real time: due, not yet written
  int64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t answered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unexpected_answers_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t audio_answers_ ABSL_GUARDED_BY(mu_) = 0;  // answers read on an audio stream
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;  // the write token
  bool closing_ ABSL_GUARDED_BY(mu_) = false;          // no more chunks will come
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;      // half-close started
  bool ended_ ABSL_GUARDED_BY(mu_) = false;            // the call is over for writing
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_STREAM_H_
