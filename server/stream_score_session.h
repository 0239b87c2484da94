// StreamScoreSession: one live StreamScore RPC, over a StreamCall (the
// callback API's reactor or a completion-queue call: stream_call.h). It owns
// the stream's plan, fusion state and buffers; reads the config and then the
// chunks, checks each, hands its frames to the BatchScheduler (one job per
// model) and writes the answers in chunk order as results come back.
//
//   new StreamScoreSession(env, call, context.peer(), deadline, absl::OkStatus());
//
// Rules it keeps: no reaction blocks, and no gRPC call is made while its own
// mutex is held (decisions are taken under the mutex, then carried out);
// one write in flight at a time, its message alive until OnWriteDone; up to
// max_chunks_in_flight chunks accepted but not yet answered (then reading
// pauses, which pushes back on the client through HTTP/2 flow control);
// SendStatus exactly once. It deletes itself (in Unref, the one place) once
// OnDone has run and no scheduler job or drain still refers to it. Each
// accepted chunk charges the most its results will hold (HeldBoundBytes:
// less where its backend selects the states), then what they hold once
// scored, to env.answer_budget until gRPC has taken its answer; reading
// also pauses while the stream holds env.max_stream_answer_bytes of such
// answers.
//
// How a stream ends:
//   client half-close    answer every accepted chunk (an audio stream's
//                        front end first gives its last frames as one), then OK
//   bad message          answer the chunks accepted before it, then its
//                        error (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION)
//   scoring failure      answer the chunks before the failed one, then its error;
//                        but a device fault (DeviceRouter::IsDeviceFault) first
//                        moves the stream to a healthy device that holds its
//                        models, if there is one, and scores the chunk again
//                        there (once per other device); the client sees only
//                        the answer. A stream also moves when it sends a chunk
//                        while its device is failing. An adapting stream whose
//                        MAP model lives on its device does not move.
//   drain (SIGTERM)      answer the accepted chunks, then UNAVAILABLE
//   cancellation         queued jobs are dropped from the scheduler (within its
//                        min_purge_interval), CANCELLED
//   RPC deadline         gRPC cancels the RPC (as above); jobs carry the deadline too
//   idle timeout         nothing read or written for env.idle_timeout and no
//                        chunk pending: DEADLINE_EXCEEDED saying it was idle
//   client not reading   an answer not taken for env.write_timeout: the RPC
//                        is cancelled (no status can reach such a client),
//                        its chunks dropped and their memory freed
//   scheduler queue full the chunk waits for room up to the scheduler's
//                        full_queue_wait (BatchScheduler, "Full-queue
//                        wait"); then it is refused: answers before it,
//                        then RESOURCE_EXHAUSTED
//   answer memory        a feature chunk that would take the server past
//                        env.answer_budget while the stream still has
//                        earlier chunks unanswered waits (reading paused)
//                        and is tried again once it would fit; a burst of
//                        unread answers costs latency, not the stream.
//                        A chunk whose answer alone exceeds
//                        env.max_stream_answer_bytes, or that would take the
//                        server past env.answer_budget with nothing of the
//                        stream's own unanswered (or an audio chunk, whose
//                        front end cannot take it twice): refused as above,
//                        RESOURCE_EXHAUSTED saying which limit
//   undecodable message  answers before it, then INVALID_ARGUMENT
#ifndef GMMSCORE_SERVER_STREAM_SCORE_SESSION_H_
#define GMMSCORE_SERVER_STREAM_SCORE_SESSION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "kernels/score/fusion.h"
#include "server/answer_budget.h"
#include "server/answer_send_stats.h"
#include "server/batch_scheduler.h"
#include "server/device_router.h"
#include "server/model_repository.h"
#include "server/scoring_plan.h"
#include "server/stream_call.h"
#include "server/stream_adaptation.h"
#include "server/stream_audio.h"
#include "server/stream_registry.h"

namespace gmmscore {

// What every stream of a service shares. Everything pointed to outlives the
// streams.
struct StreamEnvironment {
  const ModelRepository* repository = nullptr;
  // The schedulers, one per device; a stream is placed on one at its config.
  DeviceRouter* router = nullptr;
  StreamRegistry* registry = nullptr;
  int64_t max_chunk_frames = 1000;
  int max_chunks_in_flight = 8;
  // A stream on which nothing was read or written for this long ends with
  // DEADLINE_EXCEEDED (checked by the service's StreamIdleWatchdog); zero or
  // less: never.
  absl::Duration idle_timeout = absl::ZeroDuration();
  // An answer the client has not taken for this long (checked by the same
  // watchdog) cancels the stream; zero or less: never.
  absl::Duration write_timeout = absl::ZeroDuration();
  // The server's count of unsent answer bytes (never null in a service;
  // null: no accounting, for tests of other things) and one stream's share.
  AnswerBudget* answer_budget = nullptr;
  int64_t max_stream_answer_bytes = int64_t{256} << 20;
  // Counts session objects alive (constructed, not yet deleted); for tests.
  std::atomic<int64_t>* sessions_alive = nullptr;
  // Counts chunks that waited for answer memory (see "answer memory" in the
  // file comment); may be null.
  std::atomic<int64_t>* answer_memory_waits = nullptr;
  // Counts streams cancelled by write_timeout; may be null.
  std::atomic<int64_t>* stalled_streams = nullptr;
  // Where each answer's waiting and sending time is added; may be null.
  AnswerSendStats* send_stats = nullptr;
  // Live adaptation (StreamConfig.adaptation); null: refused with
  // FAILED_PRECONDITION.
  AdaptationHub* adaptation = nullptr;
  // Where audio streams' front ends are counted; may be null.
  AudioStreamStats* audio_stats = nullptr;
};

class StreamScoreSession final : public StreamCallEvents, public DrainableStream {
 public:
  // Binds to `call` (which must not have started), registers with
  // env.registry and starts reading, or finishes at once: with `refused`
  // when it is not OK (e.g. UNAUTHENTICATED), with RESOURCE_EXHAUSTED /
  // UNAVAILABLE when the registry refuses the stream. `deadline` is the
  // RPC's (absl::InfiniteFuture() for none).
  StreamScoreSession(const StreamEnvironment& env, StreamCall* call, std::string peer,
                     absl::Time deadline, const absl::Status& refused);

  // StreamCallEvents.
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // DrainableStream.
  void AddHold() override;
  void ReleaseHold() override;
  void Drain() override;
  void EndIfIdle(absl::Time now) override;

 private:
  // One accepted chunk waiting for its per-model results (or, for a fused
  // plan, for its one fused job).
  struct Chunk {
    int64_t first_frame = 0;
    int64_t frames = 0;
    int remaining = 0;                 // results still to come
    std::vector<ScoreResult> results;  // one per plan model (empty matrices if fused_only)
    std::optional<FusedScores> fused;  // a fused plan's fused scores
    absl::Status status;               // the first failure of its jobs
    // When the read that brought it completed, on the steady clock (its
    // ServerTiming.held_us must not jump with the wall clock).
    std::chrono::steady_clock::time_point read_at;
    absl::Time scored;                 // when remaining reached 0
    AnswerCharge charge;               // its results' bytes, until its answer is taken
    // An adapting stream's: where its answered frames and scores go, the
    // frames, a decoder's posteriors for them, and the adaptation that
    // scored it (for the answer).
    std::shared_ptr<StreamAdaptation> adaptation;
    std::shared_ptr<const FloatMatrix> features;
    std::optional<std::vector<StatsPair>> decoder_pairs;
    v1::AdaptationReport adaptation_report;
    // The chunk's frames until it is scored, for a job moved to another
    // device after a device fault; and the devices its jobs failed on so.
    std::shared_ptr<const FloatMatrix> retry_frames;
    std::vector<int> failed_on;
    // Where its fMLLR statistics are gathered (StreamAdaptation::Plan), and
    // whether the backend gathered them while scoring it: otherwise, once
    // answered, the adaptation's worker does.
    StreamAdaptation::ChunkGather gather;
    bool gathered = false;
  };

  // What to do once mu_ is released.
  struct Actions {
    // Jobs to submit, each run of them to its device's scheduler (a stream
    // that moves between jobs of one Actions has two runs).
    std::vector<std::pair<BatchScheduler*, std::vector<ScoreJob>>> jobs;
    std::shared_ptr<Chunk> answer;         // build its answer and write it
    bool start_read = false;
    bool purge_scheduler = false;  // drop this stream's queued jobs now
    std::optional<grpc::Status> finish;
    bool cancel_call = false;  // the client stopped reading: end the RPC
  };

  // A counted reference to the session, moved into each scheduler job's
  // callback: the job keeps the session alive from its submission until the
  // scheduler destroys the callback (after calling it, or dropping it).
  class Ref {
   public:
    Ref(Ref&& other) noexcept : session_(std::exchange(other.session_, nullptr)) {}
    Ref& operator=(Ref&&) = delete;
    ~Ref() {
      if (session_ != nullptr) session_->Unref();
    }

   private:
    friend class StreamScoreSession;
    explicit Ref(StreamScoreSession* session) : session_(session) {}
    StreamScoreSession* session_;
  };

  ~StreamScoreSession() override;

  // The request just read; may set end_status_.
  void HandleRequestLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status HandleConfigLocked(const v1::StreamConfig& config)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status HandleChunkLocked(const v1::FeatureMatrix& chunk,
                                 const v1::ChunkPosteriors* posteriors, Actions* actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An audio stream's chunk: its samples through the front end, then the
  // frames they completed as chunks of at most env_.max_chunk_frames.
  absl::Status HandleAudioLocked(const v1::AudioChunk& chunk, bool has_posteriors, Actions* actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At the half-close: the frames the front end held back, as above.
  absl::Status FlushAudioLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status HandleAudioFramesLocked(FloatMatrix frames, Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Accepts checked frames as the next chunk and submits its jobs.
  absl::Status HandleFramesLocked(std::shared_ptr<const FloatMatrix> frames,
                                  const v1::ChunkPosteriors* posteriors, Actions* actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `job` for the stream's device now (plan_->device).
  void AddJobLocked(ScoreJob job, Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the stream off the devices `tried` (work failed there with a
  // device fault; the last is where it failed now) by DeviceRouter::Move:
  // true when the stream is now on a device not in `tried` (moved here or
  // already), false when it must stay (no healthy untried peer holds its
  // models, or it adapts by MAP, whose models live on its first device).
  bool MoveOffLocked(const std::vector<int>& tried) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a job of `chunk` that failed with `status` on `device` should
  // be scored again elsewhere: a device fault, on a stream neither
  // cancelled nor draining, of a chunk still to be answered, and the
  // stream could move to a device the chunk has not failed on.
  bool RetryElsewhereLocked(Chunk& chunk, int device, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job scoring model `m` of `chunk` by `scoring` (ScoringPlanLocked's,
  // for a plan without fusion). A job scored again after a move takes the
  // adaptation current then, and its chunk reports that one.
  ScoreJob MakeModelJobLocked(const std::shared_ptr<Chunk>& chunk, int m, const ScoringPlan& scoring)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What scores `chunk` now: plan_, or for an adapting stream plan_ with the
  // current adaptation's transform or model (recorded in the chunk).
  const ScoringPlan& ScoringPlanLocked(Chunk* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Charges `frames` frames' results to the stream and the server, or says
  // which limit they would pass (RESOURCE_EXHAUSTED).
  absl::StatusOr<AnswerCharge> ChargeChunkLocked(int64_t frames) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the stream's backend returns every model's states selected
  // (ScoringBackend::ReturnsSelected): its chunks are charged that size.
  bool BackendSelectsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The write in flight has not completed for env_.write_timeout: ends the
  // stream and asks for the call to be cancelled.
  void CancelStalledWriteLocked(absl::Time now, Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a job of `chunk` scored on `device` gathers its statistics:
  // planned so, and on the device planned (a chunk moved after a fault is
  // gathered on the host instead).
  bool GathersOnLocked(const Chunk& chunk, int device) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `gathered`: the job carried the chunk's gathering.
  void OnScored(const std::shared_ptr<Chunk>& chunk, int model, int device, bool gathered,
                absl::StatusOr<ScoreResult> result);
  // A fused plan's chunk: one job over every model, fused by the backend
  // from the stream's fusion state as it is now (fusion_).
  ScoreJob MakeFusedJobLocked(std::shared_ptr<Chunk> chunk, std::shared_ptr<const FloatMatrix> frames)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnFused(const std::shared_ptr<Chunk>& chunk, int device, bool gathered,
               absl::StatusOr<FusedChunkResult> result);
  // A fused job's outcome, not retried: into `chunk`, and the next held
  // chunk's job.
  void FusedLocked(Chunk& chunk, absl::StatusOr<FusedChunkResult> result, Actions* actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the stream after the answers already due (first end wins).
  void EndLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decides the next write, read and finish.
  void AdvanceLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `chunk` has all its results: stamps it, and sets its answer charge to
  // what its results hold.
  void ScoredLocked(Chunk& chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One more reference (refs_) for a job's callback.
  Ref NewRefLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases one reference; the last deletes the session (the only place
  // that does). Call without mu_.
  void Unref();
  // Carries out `actions` (then whatever the ops it started allow next);
  // call without mu_.
  void Perform(Actions actions);
  // Encodes answer_ for `chunk`, taking its scores unless it adapts (the
  // write token is held, so answer_ is this thread's, and plan_ no longer
  // changes but for plan_->device, which the encoder must never read).
  absl::Status BuildAnswer(Chunk& chunk) ABSL_NO_THREAD_SAFETY_ANALYSIS;

  const StreamEnvironment env_;
  StreamCall* const call_;  // valid until OnDone
  const std::string peer_;
  const absl::Time deadline_;

  absl::Mutex mu_;
  StreamRequestIn request_;           // target of the read in flight
  grpc::ByteBuffer answer_;  // the write in flight; owned by the write token
  std::optional<ScoringPlan> plan_ ABSL_GUARDED_BY(mu_);
  // The device the stream is placed on (plan_->device), counted there
  // while the session lives (it changes only when the stream moves off a
  // faulty device); and its scheduler, set with the plan and on each move
  // (null before: no job exists then), read by Perform without the lock
  // for purges.
  DeviceAssignment placement_ ABSL_GUARDED_BY(mu_);
  std::atomic<BatchScheduler*> scheduler_{nullptr};
  // Set with plan_ for a plan of several models: the fusion state after the
  // chunks fused so far. A posterior fusion's state moves with every chunk,
  // so its chunks are fused one at a time, in order: a chunk read while
  // another is being scored waits in held_ (with its frames) until that one
  // comes back. Other fusions have no moving state and do not wait.
  std::optional<ModelFusion> fusion_ ABSL_GUARDED_BY(mu_);
  // Set with plan_ when the config asks for adaptation; adapted_plan_ is
  // plan_ with adaptation version adapted_version_ applied.
  std::shared_ptr<StreamAdaptation> adaptation_ ABSL_GUARDED_BY(mu_);
  std::optional<ScoringPlan> adapted_plan_ ABSL_GUARDED_BY(mu_);
  // Set with plan_ for an audio stream (StreamConfig.audio).
  std::unique_ptr<StreamAudio> audio_ ABSL_GUARDED_BY(mu_);
  uint64_t adapted_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool fusion_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::pair<std::shared_ptr<Chunk>, std::shared_ptr<const FloatMatrix>>> held_
      ABSL_GUARDED_BY(mu_);
  std::string stream_id_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Chunk>> pending_ ABSL_GUARDED_BY(mu_);  // accepted, unanswered
  int64_t next_frame_ ABSL_GUARDED_BY(mu_) = 0;      // first frame of the next chunk
  int64_t answered_frames_ ABSL_GUARDED_BY(mu_) = 0;
  // The last message read or answer written, for the idle timeout.
  absl::Time last_activity_ ABSL_GUARDED_BY(mu_) = absl::Now();
  // When the last read completed: its chunk's (or an audio stream's
  // frames') ServerTiming (a front end's frames flushed at the half-close
  // are the last read's).
  std::chrono::steady_clock::time_point request_read_at_ ABSL_GUARDED_BY(mu_);
  bool read_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  // The chunk in request_ found the server's answer memory full while
  // earlier chunks of the stream were unanswered: it waits in request_
  // (no read is started meanwhile) and AdvanceLocked tries it again.
  bool request_waits_for_memory_ ABSL_GUARDED_BY(mu_) = false;
  // Set around a chunk's handling: its charge may wait instead of failing
  // (ChargeChunkLocked then sets charge_waits_).
  bool charge_may_wait_ ABSL_GUARDED_BY(mu_) = false;
  bool charge_waits_ ABSL_GUARDED_BY(mu_) = false;
  int64_t waiting_charge_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // what the waiting chunk asked
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;  // the write token
  // Of the write in flight: when it was handed out, and its chunk's charge
  // (released once gRPC has taken the answer).
  absl::Time write_started_ ABSL_GUARDED_BY(mu_);
  AnswerCharge write_charge_ ABSL_GUARDED_BY(mu_);
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
  // Bytes of this stream's unsent answers (its charges' share); shared with
  // the charges, which may outlive the session in a finishing job.
  const std::shared_ptr<std::atomic<int64_t>> unsent_bytes_ =
      std::make_shared<std::atomic<int64_t>>(0);
  // Reads and writes decided under mu_ but not yet handed to the call by
  // the thread that decided them (Perform); the final status waits for them.
  int ops_starting_ ABSL_GUARDED_BY(mu_) = 0;
  // Of the answer being written, for env_.send_stats: how long it waited
  // for the token after its chunk was scored, and when it was handed to gRPC
  // (set by the token's holder outside mu_, read in OnWriteDone).
  absl::Duration send_wait_ ABSL_GUARDED_BY(mu_);
  absl::Time send_started_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> end_status_ ABSL_GUARDED_BY(mu_);
  // References that keep this object alive: one for the RPC until OnDone,
  // one per scheduler job's callback (Ref), one per drain or watchdog hold.
  int refs_ ABSL_GUARDED_BY(mu_) = 1;
  const std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_SCORE_SESSION_H_
