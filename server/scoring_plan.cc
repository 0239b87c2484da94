#include "server/scoring_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "kernels/core/feature_values.h"
#include "kernels/core/status_macros.h"
#include "proto/wire_convert.h"
#include "server/client_text.h"

namespace gmmscore {
namespace {

constexpr int kDefaultWindowFrames = 50;

absl::StatusOr<FusionOptions> FusionFromProto(const v1::FusionOptions& proto) {
  FusionOptions options;
  switch (proto.method()) {
    case v1::FUSION_METHOD_UNSPECIFIED:
    case v1::FUSION_METHOD_MAX:
      options.method = FusionMethod::kMax;
      break;
    case v1::FUSION_METHOD_LOG_SUM_EXP:
      options.method = FusionMethod::kLogSumExp;
      break;
    case v1::FUSION_METHOD_POSTERIOR:
      options.method = FusionMethod::kPosterior;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("fusion.method %d is not a known FusionMethod", proto.method()));
  }
  options.weights.assign(proto.weights().begin(), proto.weights().end());
  // Out-of-range windows are left for ModelFusion::Create to reject by value.
  options.window_frames =
      proto.window_frames() == 0
          ? kDefaultWindowFrames
          : static_cast<int>(std::min<uint32_t>(proto.window_frames(), INT32_MAX));
  options.acoustic_scale = proto.acoustic_scale() == 0.0f ? 1.0 : proto.acoustic_scale();
  return options;
}

absl::StatusOr<std::shared_ptr<const FeatureTransform>> TransformFromProto(
    const v1::AffineTransform& proto, int dim) {
  if (proto.rows() == 0 && proto.cols() == 0 && proto.values().empty()) return nullptr;
  if (static_cast<int>(proto.rows()) != dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "transform has %d rows but the models have dimension %d", proto.rows(), dim));
  }
  absl::StatusOr<FeatureTransform> transform =
      FeatureTransform::Create(proto.rows(), proto.cols(), proto.values());
  if (!transform.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("transform: ", transform.status().message()));
  }
  return std::make_shared<const FeatureTransform>(*std::move(transform));
}

absl::StatusOr<ScoringPlan> MakePlan(const google::protobuf::RepeatedPtrField<std::string>& names,
                                     const v1::FusionOptions& fusion,
                                     const v1::AffineTransform& transform,
                                     const v1::OutputOptions& output,
                                     const ModelRepository& repository) {
  if (names.empty()) {
    return absl::InvalidArgumentError("no models named; name at least one model to score with");
  }
  ScoringPlan plan;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrFormat("model '%s' is named twice", ClientText(name)));
    }
    GMM_ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, repository.Find(name));
    plan.models.push_back(std::move(model));
  }
  const PreparedModel& first = *plan.models.front()->prepared;
  plan.dim = first.dim();
  plan.num_states = first.num_states();
  for (const std::shared_ptr<const ServedModel>& model : plan.models) {
    if (model->prepared->dim() != plan.dim) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "models '%s' (dimension %d) and '%s' (dimension %d) cannot score the same frames",
          plan.models.front()->name, plan.dim, model->name, model->prepared->dim()));
    }
    if (model->prepared->num_states() != plan.num_states) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "models '%s' (%d states) and '%s' (%d states) cannot be fused; fused models must "
          "share one state set",
          plan.models.front()->name, plan.num_states, model->name, model->prepared->num_states()));
    }
  }
  if (plan.models.size() > 1) {
    GMM_ASSIGN_OR_RETURN(FusionOptions options, FusionFromProto(fusion));
    // Checked here so that a bad config fails at once, not at the first chunk.
    absl::StatusOr<ModelFusion> check = ModelFusion::Create(plan.models.size(), options);
    if (!check.ok()) return check.status();
    plan.fusion = std::move(options);
  }
  GMM_ASSIGN_OR_RETURN(plan.transform, TransformFromProto(transform, plan.dim));
  plan.fused_only = output.fused_only();
  plan.frame_totals = output.frame_totals();
  if (!std::isfinite(output.beam()) || output.beam() < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "output.beam is %g; it must be a finite number of nats >= 0 (0: every state)", output.beam()));
  }
  plan.sparse.beam = output.beam();
  plan.sparse.top_k = static_cast<int>(std::min<uint32_t>(output.top_k(), plan.num_states));
  plan.encoding = output.float16() ? ValueEncoding::kHalfFromBest : ValueEncoding::kFloat32;
  plan.server_timing = output.server_timing();
  return plan;
}

}  // namespace

void CountStream(const ScoringPlan& plan) {
  for (const auto& model : plan.models) model->usage->streams.fetch_add(1, std::memory_order_relaxed);
}

void CountRequest(const ScoringPlan& plan, int64_t frames) {
  for (const auto& model : plan.models) model->usage->requests.fetch_add(1, std::memory_order_relaxed);
  CountFrames(plan, frames);
}

void CountFrames(const ScoringPlan& plan, int64_t frames) {
  for (const auto& model : plan.models) model->usage->frames.fetch_add(frames, std::memory_order_relaxed);
}

absl::StatusOr<ScoringPlan> PlanForStream(const v1::StreamConfig& config,
                                          const ModelRepository& repository) {
  return MakePlan(config.models(), config.fusion(), config.transform(), config.output(),
                  repository);
}

absl::StatusOr<ScoringPlan> PlanForRequest(const v1::ScoreRequest& request,
                                           const ModelRepository& repository) {
  return MakePlan(request.models(), request.fusion(), request.transform(), request.output(),
                  repository);
}

absl::StatusOr<std::shared_ptr<const FloatMatrix>> CheckFrames(const v1::FeatureMatrix& features,
                                                               const ScoringPlan& plan,
                                                               const FrameLimits& limits) {
  const int64_t frames = features.num_frames();
  if (frames == 0 && !limits.allow_empty) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk at frame %d has no frames; a chunk carries at least one frame",
        limits.first_frame));
  }
  if (frames > limits.max_frames) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk at frame %d has %d frames; this server accepts at most %d frames per chunk",
        limits.first_frame, frames, limits.max_frames));
  }
  if (frames > 0 && static_cast<int>(features.dim()) != plan.dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk at frame %d has dimension %d but model '%s' has dimension %d", limits.first_frame,
        features.dim(), plan.models.front()->name, plan.dim));
  }
  absl::StatusOr<FloatMatrix> matrix = FeaturesFromProto(features);
  if (!matrix.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("chunk at frame %d: %s", limits.first_frame,
                                                      matrix.status().message()));
  }
  if (frames == 0) matrix->Resize(0, plan.dim);
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = matrix->row(t);
    for (int d = 0; d < plan.dim; ++d) {
      if (!IsUsableFeatureValue(row[d])) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "frame %d (row %d of the chunk at frame %d), dimension %d is %g; %s",
            limits.first_frame + t, t, limits.first_frame, d, row[d], kFeatureValueRule));
      }
    }
  }
  return std::make_shared<const FloatMatrix>(*std::move(matrix));
}

int ResultSets(const ScoringPlan& plan) {
  return static_cast<int>(plan.models.size()) + (plan.fusion.has_value() ? 1 : 0);
}

int64_t ResultBytes(const ScoringPlan& plan, int64_t frames) {
  // frames <= 2^31 and states x sets < 2^31 in any plan that passed its
  // checks, so the product fits int64.
  return frames * plan.num_states * ResultSets(plan) * static_cast<int64_t>(sizeof(float));
}

int64_t HeldBoundBytes(const ScoringPlan& plan, int64_t frames, bool backend_selects) {
  const int64_t models = static_cast<int64_t>(plan.models.size());
  // 4 bytes a value, an id, an offset, a total and a weight, as HeldBytes
  // counts them.
  const int64_t four = static_cast<int64_t>(sizeof(float));
  if (backend_selects && !plan.fusion.has_value() && plan.sparse.top_k > 0 &&
      plan.sparse.top_k < plan.num_states) {
    // Above the dense bound for k near the state count: a selection holds
    // ids too, and the backend still returns one.
    return models * four * (2 * frames * plan.sparse.top_k + (frames + 1) + frames);
  }
  const int64_t weights = plan.fusion.has_value() ? frames * models * four : 0;
  return ResultBytes(plan, frames) + ResultSets(plan) * frames * four + weights;
}

int64_t HeldBytes(const ScoreResult& result) {
  int64_t floats = result.loglikes.rows() * result.loglikes.cols() +
                   static_cast<int64_t>(result.frame_totals.size());
  if (result.sparse.has_value()) {
    // ids and offsets are 4 bytes each, as floats are
    floats += static_cast<int64_t>(result.sparse->values.size() + result.sparse->state_ids.size() +
                                   result.sparse->frame_offsets.size());
  }
  int64_t bytes = floats * static_cast<int64_t>(sizeof(float));
  if (result.half.has_value()) {
    bytes += static_cast<int64_t>(sizeof(uint16_t) * result.half->values.size() +
                                  sizeof(float) * result.half->frame_best.size());
  }
  return bytes;
}

int64_t HeldBytes(const FusedScores& fused) {
  return static_cast<int64_t>(sizeof(float)) *
         (fused.loglikes.rows() * fused.loglikes.cols() +
          static_cast<int64_t>(fused.model_weights.size() + fused.frame_totals.size()));
}

bool WantsHalvesFromBackend(const ScoringPlan& plan, bool adapts) {
  return plan.encoding == ValueEncoding::kHalfFromBest && plan.sparse.dense() && !plan.fusion.has_value() &&
         !adapts;
}

std::shared_ptr<const PreparedModel> ReplicaOf(const ScoringPlan& plan, size_t m) {
  return plan.models[m]->replica(plan.device);
}

std::shared_ptr<const FusedChunk> FusedChunkFor(const ScoringPlan& plan, ModelFusion state) {
  auto fused = std::make_shared<FusedChunk>(FusedChunk{
      .state = std::move(state), .model_scores = !plan.fused_only, .frame_totals = plan.frame_totals});
  for (size_t m = 0; m < plan.models.size(); ++m) {
    const std::shared_ptr<const ServedModel>& model = plan.models[m];
    fused->models.push_back(ReplicaOf(plan, m));
    fused->precisions.push_back(model->precision);
  }
  return fused;
}

int64_t SmallestBatchCap(const ScoringPlan& plan) {
  int64_t cap = 0;
  for (const std::shared_ptr<const ServedModel>& model : plan.models) {
    if (model->max_batch_frames > 0 && (cap == 0 || model->max_batch_frames < cap)) {
      cap = model->max_batch_frames;
    }
  }
  return cap;
}

namespace internal {
namespace {

// Fills *out with `loglikes` under `model` as the plan's output options
// ask. With `deferred` set, a dense float32 matrix's values are left out of
// the message and their span appended instead (an empty span for any other
// kind of part), for the answer encoder to copy once, into the wire bytes.
void AddScores(const ScoringPlan& plan, absl::string_view model, const FloatMatrix& loglikes,
               absl::Span<const float> totals, v1::StateScores* out,
               std::vector<internal::DeferredValues>* deferred) {
  if (deferred != nullptr && plan.sparse.dense() && plan.encoding == ValueEncoding::kFloat32) {
    DenseScoresShapeToProto(model, loglikes.rows(), loglikes.cols(), totals, out);
    deferred->push_back({.loglikes = absl::MakeConstSpan(loglikes.data(), loglikes.rows() * loglikes.cols())});
    return;
  }
  ScoresToProto(model, loglikes, totals, out, plan.sparse, plan.encoding);
  if (deferred != nullptr) deferred->emplace_back();
}

// States a backend selected into *out, as AddScores does for a matrix: with
// `deferred` set, float32 values, state ids and frame offsets are left out of
// the message for the encoder to write (protobuf copied them into the
// message's repeated fields, then sized and wrote them again: the encoder
// is 1.13-1.19x faster an answer, docs/PERFORMANCE.md, "top_k answers
// written by the encoder"). Half-precision ones (encoded here) and an empty
// selection go into the message. INTERNAL for a selection among another
// number of states than the plan's.
absl::Status AddSelected(const ScoringPlan& plan, absl::string_view model, const SparseScores& kept,
                         absl::Span<const float> totals, v1::StateScores* out,
                         std::vector<internal::DeferredValues>* deferred) {
  if (kept.num_states != plan.num_states) {
    return absl::InternalError(absl::StrCat("the backend selected states of '", model, "' among ",
                                            kept.num_states, "; the plan has ", plan.num_states));
  }
  if (deferred != nullptr && plan.encoding == ValueEncoding::kFloat32 && !kept.values.empty()) {
    DenseScoresShapeToProto(model, kept.num_frames(), kept.num_states, totals, out);
    deferred->push_back({.loglikes = kept.values, .sparse = &kept});
    return absl::OkStatus();
  }
  SparseScoresToProto(model, kept, totals, out, plan.encoding);
  if (deferred != nullptr) deferred->emplace_back();
  return absl::OkStatus();
}

// A backend's half-precision scores into *out, as AddScores does for float32
// ones: the halves left out of the message with `deferred` set. INTERNAL
// for halves the plan did not ask for or of the wrong shape.
absl::Status AddHalves(const ScoringPlan& plan, absl::string_view model, const HalfScores& half,
                       absl::Span<const float> totals, v1::StateScores* out,
                       std::vector<internal::DeferredValues>* deferred) {
  if (plan.encoding != ValueEncoding::kHalfFromBest || !plan.sparse.dense()) {
    return absl::InternalError(
        absl::StrCat("the backend sent '", model, "' in half precision, which the stream did not ask for"));
  }
  if (half.num_states != plan.num_states ||
      static_cast<int64_t>(half.values.size()) != half.num_frames() * half.num_states) {
    return absl::InternalError(absl::StrCat("the backend's half-precision scores of '", model, "' are ",
                                            half.values.size(), " values for ", half.num_frames(),
                                            " frames of ", half.num_states, " states; the plan has ",
                                            plan.num_states, " states"));
  }
  if (deferred == nullptr) {
    HalfScoresToProto(model, half, totals, out);
    return absl::OkStatus();
  }
  HalfScoresShapeToProto(model, half, totals, out);
  deferred->push_back({.halves = half.values});
  return absl::OkStatus();
}

}  // namespace

absl::Status FillAnswerParts(const ScoringPlan& plan, absl::Span<const ScoreResult> results,
                             const FusedScores* fused,
                             google::protobuf::RepeatedPtrField<v1::StateScores>* scores,
                             v1::StateScores* fused_scores, v1::FusionReport* report,
                             std::vector<DeferredValues>* deferred_values) {
  const bool send_models = fused == nullptr || !plan.fused_only;
  if (send_models) {
    for (size_t m = 0; m < results.size(); ++m) {
      const absl::Span<const float> totals =
          plan.frame_totals ? absl::MakeConstSpan(results[m].frame_totals) : absl::Span<const float>();
      if (results[m].sparse.has_value()) {  // selected by the backend (on a GPU)
        GMM_RETURN_IF_ERROR(AddSelected(plan, plan.models[m]->name, *results[m].sparse, totals,
                                        scores->Add(), deferred_values));
      } else if (results[m].half.has_value()) {  // encoded by the backend (on a GPU)
        GMM_RETURN_IF_ERROR(AddHalves(plan, plan.models[m]->name, *results[m].half, totals, scores->Add(),
                                      deferred_values));
      } else {
        AddScores(plan, plan.models[m]->name, results[m].loglikes, totals, scores->Add(),
                  deferred_values);
      }
    }
  }
  if (fused == nullptr) return absl::OkStatus();

  std::vector<float> computed_totals;
  absl::Span<const float> totals;
  if (plan.frame_totals) {
    if (static_cast<int64_t>(fused->frame_totals.size()) == fused->loglikes.rows()) {
      totals = fused->frame_totals;
    } else {
      computed_totals = ComputeFrameTotals(fused->loglikes);
      totals = computed_totals;
    }
  }
  AddScores(plan, "fused", fused->loglikes, totals, fused_scores, deferred_values);
  report->set_dominant_model_index(fused->dominant_model);
  report->set_dominant_model(plan.models[fused->dominant_model]->name);
  report->mutable_model_share()->Add(fused->model_share.begin(), fused->model_share.end());
  report->mutable_model_weights()->Add(fused->model_weights.begin(), fused->model_weights.end());
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace gmmscore
