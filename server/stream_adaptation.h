// StreamAdaptation: the live speaker adaptation of one stream
// (StreamConfig.adaptation) between its session and the AdaptationHub's
// workers. The session asks Now() what scores each chunk it accepts, and
// hands every answered chunk (in stream order) to Gather; a worker turns
// the chunk into statistics (OnlineAdapter, kernels/train) and, when the
// schedule says, estimates the next transform or MAP model, prepares it and
// makes it current. Scoring never waits for any of this: a chunk read while
// an update is being estimated is scored with the version before.
//
//   GMM_ASSIGN_OR_RETURN(auto adaptation, StreamAdaptation::Create(config.adaptation(), plan, hub, id));
//   StreamAdaptation::Current now = adaptation->Now();   // per chunk accepted
//   adaptation->Gather(frames, std::move(result), {});   // per chunk answered
//   adaptation->Close();                                 // when the stream ends
//
// Where statistics are gathered: an fMLLR stream whose device's backend
// gathers (ScoringBackend::CreateFmllrGather: CUDA) has them gathered by the
// backend while it scores the stream's chunks (kernels/score/
// fmllr_gather.h), so a worker only reads the sums and estimates, once per
// update. The session plans each chunk as it accepts it (Plan, in stream
// order): the update it belongs to, hence the target's segment, and whether
// the update follows it. A chunk is gathered on the host instead (its frames
// and scores to a worker, as every chunk of a MAP stream or of a CPU
// backend) when it carries a decoder's posteriors, is scored on another
// device than the target's (a move after a fault), or belongs to an update
// two ahead of the last one read; after a failed read (FmllrGatherTarget::
// Take) every later chunk is. Either way update k is made from the stream's
// frames [0, N_k), N_k the end of the chunk that ends it.
//
// Bounds: chunks waiting for a worker hold at most
// AdaptationLimits::max_backlog_frames frames; beyond that a chunk is
// skipped (its frames counted in every later report's skipped_frames), so
// a stream that outruns the workers costs bounded memory. A stream that
// publishes (save_as) and ends well (the client half-closed, every chunk
// answered) is closed with its final update: the workers finish its
// backlog and make one more update from all its frames, published under
// the name (a speaker's transform from everything they said). Any other
// close drops the backlog. A task already running finishes and releases
// its model.
//
// Thread safety: all methods are thread-safe. Objects are shared: the
// workers' tasks hold a reference while they run.
#ifndef GMMSCORE_SERVER_STREAM_ADAPTATION_H_
#define GMMSCORE_SERVER_STREAM_ADAPTATION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/scoring_backend.h"
#include "kernels/train/online_adaptation.h"
#include "server/adaptation_hub.h"
#include "server/model_repository.h"
#include "server/scoring_plan.h"

namespace gmmscore {

class StreamAdaptation : public std::enable_shared_from_this<StreamAdaptation> {
 public:
  // Checks `config` against the stream's plan:
  //   INVALID_ARGUMENT   no method; a model not among the stream's; fMLLR
  //                      with a StreamConfig.transform; fused_only with
  //                      several models (the driving model's scores are
  //                      not computed then); a bad save_as name; silence
  //                      states out of the model's range; a negative
  //                      threshold, tau or count
  //   FAILED_PRECONDITION a tied-mixture driving model; save_as naming a
  //                      model loaded from a file (MAP)
  // `hub` must outlive the object; `label` names the stream in logs.
  // `backend` (may be null: host gathering) is the one of plan.device.
  static absl::StatusOr<std::shared_ptr<StreamAdaptation>> Create(
      const v1::AdaptationConfig& config, const ScoringPlan& plan, AdaptationHub* hub,
      std::string label, ScoringBackend* backend = nullptr);
  ~StreamAdaptation();

  // Index of the driving model in the plan.
  int driving_model() const { return driving_; }
  AdaptationMethod method() const { return options_.method; }

  struct Current {
    // Non-null once an update made them: the fMLLR transform to score with
    // (instead of the plan's none), or the MAP model to score in place of
    // the driving model.
    std::shared_ptr<const FeatureTransform> transform;
    std::shared_ptr<const ServedModel> model;
    v1::AdaptationReport report;  // for the answer of a chunk scored so
  };
  Current Now() const;

  // A chunk's decoder posteriors (`frames` frames, stream frame
  // `first_frame` for messages) as pairs, filtered by the silence policy.
  // INVALID_ARGUMENT naming the list or the entry: lists of different
  // lengths, a frame outside the chunk, a state outside the driving
  // model, a weight that is negative or not finite.
  absl::StatusOr<std::vector<StatsPair>> DecoderPairs(const v1::ChunkPosteriors& posteriors,
                                                      int64_t frames, int64_t first_frame) const;

  // Where one chunk's statistics are gathered (see the file comment).
  struct ChunkGather {
    // The backend's target and the segment of the chunk's update; null:
    // on the host, by a worker.
    std::shared_ptr<FmllrGatherTarget> target;
    int segment = 0;
    int device = -1;           // the target's
    bool ends_update = false;  // the schedule's next update follows the chunk
    int64_t frames_end = 0;    // the stream's frames through the chunk
  };
  // The next chunk, of `rows` frames, to be scored on `device`, with a
  // decoder's posteriors or not. Plain (host, no update) for a stream that
  // does not gather on a device: its updates follow OnlineAdapter's own
  // schedule.
  ChunkGather Plan(int64_t rows, int device, bool decoder_pairs);

  // An answered chunk: its frames as sent, the driving model's scores for
  // them, the decoder's pairs if it sent any, its plan, and whether the
  // backend gathered it as planned (then frames and scores are not read).
  // Returns at once.
  void Gather(std::shared_ptr<const FloatMatrix> frames, ScoreResult scores,
              std::optional<std::vector<StatsPair>> decoder_pairs, const ChunkGather& gather,
              bool gathered);

  // The stream ended (`ended_well`: its status is OK): nothing more is
  // gathered; see the file comment for what is still estimated.
  void Close(bool ended_well);

 private:
  struct Work {
    // Null: nothing to gather here (the backend did, or it was skipped).
    std::shared_ptr<const FloatMatrix> frames;
    ScoreResult scores;
    std::optional<std::vector<StatsPair>> decoder_pairs;
    ChunkGather plan;  // device gathering only
    // Updates this item ends: more than one where markers without frames
    // were merged (a worker behind on updates: the backlog stays bounded).
    int updates = 1;
  };

  StreamAdaptation(AdaptationHub* hub, const OnlineAdaptationOptions& options, int driving,
                   std::shared_ptr<const ServedModel> base, int device,
                   std::shared_ptr<const FeatureTransform> input_transform, std::string save_as,
                   std::string label, std::shared_ptr<FmllrGatherTarget> target);
  // The adapter, made on the worker at the first chunk (an fMLLR one shares
  // its model's accumulator, AdaptationHub::FmllrAccumulatorFor, whose
  // first making takes a while: never on a gRPC thread).
  absl::StatusOr<OnlineAdapter*> Adapter();
  // Worker: gathers the backlog in order, updating when due, and makes
  // the final update of a closed stream that publishes.
  void RunBacklog();
  // Under mu_: whether a worker still has something to do.
  bool WorkLeftLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GatherOne(Work work);
  // A chunk's statistics on the host (AddChunk); false if they could not be.
  bool GatherOnHost(Work& work);
  // Device gathering: reads segment `segment` into the adapter (or, after
  // a failed read, counts its frames as skipped) and frees it for planning.
  void TakeSegment(int segment);
  // Device gathering: the closing update, from every frame planned.
  void FinalDeviceUpdate();
  void UpdateNow();

  AdaptationHub* const hub_;
  const OnlineAdaptationOptions options_;
  const int driving_;
  const std::shared_ptr<const ServedModel> base_;  // the driving model as planned
  const int device_;  // the stream's (ScoringPlan::device): adapted models go there
  // MAP: the plan's transform, applied to frames before statistics (the
  // model scores transformed frames). Null: none.
  const std::shared_ptr<const FeatureTransform> input_transform_;
  const std::string save_as_;
  const std::string label_;
  // Touched by one worker task at a time (running_ below).
  std::unique_ptr<OnlineAdapter> adapter_;
  int64_t updated_frames_ = 0;  // the frames of the last update made

  mutable absl::Mutex mu_;
  Current current_ ABSL_GUARDED_BY(mu_);
  std::deque<Work> backlog_ ABSL_GUARDED_BY(mu_);
  int64_t backlog_frames_ ABSL_GUARDED_BY(mu_) = 0;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a worker task owns the backlog
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool final_wanted_ ABSL_GUARDED_BY(mu_) = false;  // closed well, with save_as
  bool final_done_ ABSL_GUARDED_BY(mu_) = false;  // the closing update was made (or skipped)

  // Device gathering (null: none), declared after base_ so that it goes
  // first; and the schedule as planned, chunk by chunk.
  const std::shared_ptr<FmllrGatherTarget> target_;
  int64_t planned_frames_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t planned_update_ ABSL_GUARDED_BY(mu_) = 0;  // the update the next chunk belongs to
  int64_t planned_due_ ABSL_GUARDED_BY(mu_) = 0;     // its due frame count; 0: none
  int64_t taken_updates_ ABSL_GUARDED_BY(mu_) = 0;   // updates whose segment was read
  bool target_failed_ ABSL_GUARDED_BY(mu_) = false;
  // Frames the backend gathered into each segment since it was last read.
  int64_t device_frames_[FmllrGatherTarget::kSegments] ABSL_GUARDED_BY(mu_) = {};
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_ADAPTATION_H_
