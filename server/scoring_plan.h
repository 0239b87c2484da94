// ScoringPlan: what a stream config (or a Score request) asks for, checked
// against the models served: the models, the fusion, the transform and the
// output options. Also the checks on incoming frames and the assembly of an
// answer from per-model results. No gRPC calls in here, only messages.
//
//   GMM_ASSIGN_OR_RETURN(ScoringPlan plan, PlanForStream(config, repository));
//   GMM_ASSIGN_OR_RETURN(auto frames, CheckFrames(request.chunk(), plan, {...}));
//   ... score frames with every plan.models[i] ...
//   GMM_RETURN_IF_ERROR(FillAnswer(plan, results, fusion.get(), &response));
#ifndef GMMSCORE_SERVER_SCORING_PLAN_H_
#define GMMSCORE_SERVER_SCORING_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/fusion.h"
#include "kernels/score/scoring_backend.h"
#include "proto/wire_convert.h"
#include "server/batch_scheduler.h"
#include "server/model_repository.h"

namespace gmmscore {

struct ScoringPlan {
  // >= 1, distinct, in the order named; the versions served when the plan
  // was made (a stream keeps them to its end, whatever is loaded meanwhile).
  std::vector<std::shared_ptr<const ServedModel>> models;
  int dim = 0;                              // shared by all models
  int num_states = 0;                       // shared by all models
  std::optional<FusionOptions> fusion;      // set iff models.size() > 1
  std::shared_ptr<const FeatureTransform> transform;  // null: none
  bool fused_only = false;
  bool frame_totals = false;
  StateSelection sparse;  // OutputOptions.beam / top_k; dense by default
  ValueEncoding encoding = ValueEncoding::kFloat32;  // OutputOptions.float16
  bool server_timing = false;  // OutputOptions.server_timing (StreamScore's answers)
  // The device it is scored on (DeviceRouter): every model's replica there.
  int device = 0;
};

// plan.models[m]'s replica on plan.device.
std::shared_ptr<const PreparedModel> ReplicaOf(const ScoringPlan& plan, size_t m);

// INVALID_ARGUMENT: no models, a repeated name, models of different
// dimension or (with several) state count, bad fusion options, transform or
// output options (a negative or non-finite beam);
// NOT_FOUND: a name the repository does not serve. Messages name the field.
// Per-model usage (ModelUsage, /metrics): a stream opened, a request, or
// frames sent, for every model of the plan.
void CountStream(const ScoringPlan& plan);
void CountRequest(const ScoringPlan& plan, int64_t frames);
void CountFrames(const ScoringPlan& plan, int64_t frames);

absl::StatusOr<ScoringPlan> PlanForStream(const v1::StreamConfig& config,
                                          const ModelRepository& repository);
absl::StatusOr<ScoringPlan> PlanForRequest(const v1::ScoreRequest& request,
                                           const ModelRepository& repository);

struct FrameLimits {
  int64_t first_frame = 0;  // the chunk's position in its stream, for messages
  int64_t max_frames = 0;   // most frames accepted
  bool allow_empty = false;
};

// The frames of `features` once they pass every check: count in
// [allow_empty ? 0 : 1, max_frames], dim == plan.dim, value count, every value
// finite. INVALID_ARGUMENT otherwise, naming the stream frame and dimension
// of the first bad value.
absl::StatusOr<std::shared_ptr<const FloatMatrix>> CheckFrames(const v1::FeatureMatrix& features,
                                                               const ScoringPlan& plan,
                                                               const FrameLimits& limits);

// How many T x S score matrices scoring `plan` holds at once: one per model,
// plus the fused scores when it fuses (whether or not all are answered).
int ResultSets(const ScoringPlan& plan);

// Bytes of the float32 results of `frames` frames under `plan`: frames x
// states x ResultSets x 4. It bounds both the memory the results take while
// an answer is built and the answer's size on the wire (float16 and sparse
// answers are smaller), so Score checks it against the message limit before
// any work, and a stream charges it to its unsent-answer budget.
int64_t ResultBytes(const ScoringPlan& plan, int64_t frames);

// Bytes the results of `frames` frames under `plan` hold at most once
// scored, as HeldBytes counts them (frame totals are made for every call,
// sent or not). Dense: the float32 matrices of ResultBytes with a total a
// frame each, and the fusion weights where the plan fuses. Where
// `backend_selects` (ScoringBackend::ReturnsSelected for every model) and
// the plan keeps a top_k below the state count without fusing (fused
// windows come back dense): per model, k values and ids, an offset and a
// total a frame; top_k 100 of 5000 states is 1/25 of dense. A stream
// charges each chunk this when it accepts it.
int64_t HeldBoundBytes(const ScoringPlan& plan, int64_t frames, bool backend_selects);

// Bytes the scores of `result` (or `fused`) hold now: the dense matrix, or
// the states a backend selected, or the halves it encoded, and the frame
// totals (and fusion weights).
// At most HeldBoundBytes' share, much less for states selected on a GPU.
int64_t HeldBytes(const ScoreResult& result);
int64_t HeldBytes(const FusedScores& fused);

// Whether a job of `plan` asks its backend for half-precision scores
// (ScoreJob::half_from_best): float16 answers of every state, scores that go
// nowhere but the answer (not a stream that adapts: its statistics read
// them), no fusion.
bool WantsHalvesFromBackend(const ScoringPlan& plan, bool adapts);

// The fused job spec for one chunk of `plan` (which has a fusion): every
// model with its precision, `state` (the fusion state before the chunk),
// and the plan's output options.
std::shared_ptr<const FusedChunk> FusedChunkFor(const ScoringPlan& plan, ModelFusion state);

// The smallest of the plan's models' own batch caps (ServedModel::
// max_batch_frames), 0 when none has one.
int64_t SmallestBatchCap(const ScoringPlan& plan);

// Fills response->scores, ->fused and ->fusion from results[i] (plan.models[i]'s
// T x S scores) and `fusion` (non-null iff plan.fusion is set; advanced by
// these frames). Response is v1::StreamScoreResponse or v1::ScoreResponse.
template <typename Response>
absl::Status FillAnswer(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                        ModelFusion* fusion, Response* response);

// The same with the fusion done already (by the backend, FusedChunkResult):
// `fused` is the chunk's fused scores; results may be empty matrices when
// plan.fused_only (they are not sent then). Fused frame totals are taken
// from fused.frame_totals when filled, else computed here if asked for.
template <typename Response>
absl::Status FillFusedAnswer(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                             const FusedScores& fused, Response* response);

namespace internal {
// The values of one StateScores left out of its message, for the answer's
// encoder to write (server/answer_encoder.h): a dense float32 part's
// loglikes (field 4), or a dense half-precision part's loglikes_f16 (field
// 8); both empty for a part whose message carries its values. A float32
// part of states the backend selected (top_k on a GPU) has `sparse` too:
// loglikes are its values, and its frame_offsets (6) and state_ids (7) are
// left to the encoder as well.
struct DeferredValues {
  absl::Span<const float> loglikes;
  absl::Span<const uint16_t> halves;
  const SparseScores* sparse = nullptr;

  bool empty() const { return loglikes.empty() && halves.empty() && sparse == nullptr; }
};

// `fused` null: no fusion (a single model). `deferred_values` null: every
// value goes into the messages. Otherwise it gets one entry per StateScores
// filled (scores in order, then fused), its values left out of the message.
absl::Status FillAnswerParts(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                             const FusedScores* fused,
                             google::protobuf::RepeatedPtrField<v1::StateScores>* scores,
                             v1::StateScores* fused_scores, v1::FusionReport* report,
                             std::vector<DeferredValues>* deferred_values = nullptr);
}  // namespace internal

template <typename Response>
absl::Status FillAnswer(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                        ModelFusion* fusion, Response* response) {
  if (fusion == nullptr) {
    return internal::FillAnswerParts(plan, results, nullptr, response->mutable_scores(), nullptr,
                                     nullptr);
  }
  std::vector<ConstMatrixView> views;
  for (const ScoreResult& r : results) views.push_back(r.loglikes.view());
  FusedScores fused;
  if (absl::Status status = fusion->Fuse(views, &fused); !status.ok()) return status;
  return FillFusedAnswer(plan, results, fused, response);
}

template <typename Response>
absl::Status FillFusedAnswer(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                             const FusedScores& fused, Response* response) {
  return internal::FillAnswerParts(plan, results, &fused, response->mutable_scores(),
                                   response->mutable_fused(), response->mutable_fusion());
}

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SCORING_PLAN_H_
