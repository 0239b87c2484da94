#include "kernels/cuda/lane_warm_up.h"

#include <algorithm>

#include "kernels/core/matrix.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/batch_plan.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/fusion.h"

namespace gmmscore {
namespace {

// How a warm-up call asks for its answers.
enum class AnswerKind { kWhole, kTopK, kHalves, kFused, kAdapting };

// What one warm-up call needs that outlives it: zero frames, and for the
// adapting calls a speaker transform a window (distinct ones: a call packs
// each distinct transform once, so one a window is the most it can pack).
struct WarmUpInputs {
  FloatMatrix zeros;
  std::vector<FeatureTransform> transforms;
};

absl::StatusOr<WarmUpInputs> MakeWarmUpInputs(const PreparedModel& model, const WarmUpShape& shape,
                                              bool adapting) {
  WarmUpInputs inputs{.zeros = FloatMatrix(shape.frames, model.dim())};
  if (!adapting) return inputs;
  const int dim = static_cast<int>(model.dim());
  std::vector<float> identity(static_cast<size_t>(dim) * (dim + 1), 0.0f);
  for (int d = 0; d < dim; ++d) identity[d * (dim + 1) + d] = 1.0f;
  const int64_t windows = (shape.frames + shape.window_frames - 1) / shape.window_frames;
  inputs.transforms.reserve(windows);
  for (int64_t w = 0; w < windows; ++w) {
    GMM_ASSIGN_OR_RETURN(FeatureTransform transform, FeatureTransform::Create(dim, dim + 1, identity));
    inputs.transforms.push_back(std::move(transform));
  }
  return inputs;
}

// Consecutive windows in pairs of equal frames, each pair fused with
// posterior weights (the most a fusion stages: log weights a frame and
// model); an odd last window stays unfused.
struct WarmUpFusions {
  std::vector<ModelFusion> fusions;
  std::vector<FusedScores> outs;
  std::vector<FusionJob> jobs;
};

absl::StatusOr<WarmUpFusions> PairWindows(absl::Span<const ScoreWindow> windows) {
  WarmUpFusions paired;
  const size_t pairs = windows.size() / 2;
  paired.outs.resize(pairs);
  for (size_t p = 0; p < pairs; ++p) {
    if (windows[2 * p].features.rows != windows[2 * p + 1].features.rows) break;
    GMM_ASSIGN_OR_RETURN(ModelFusion fusion, ModelFusion::Create(2, {.method = FusionMethod::kPosterior}));
    paired.fusions.push_back(std::move(fusion));
  }
  for (size_t p = 0; p < paired.fusions.size(); ++p) {
    const int first = static_cast<int>(2 * p);
    paired.jobs.push_back(
        {.windows = {first, first + 1}, .fusion = &paired.fusions[p], .out = &paired.outs[p], .frame_totals = true});
  }
  return paired;
}

// One call of `frames` zero frames of `model` on `lane`, in windows of
// shape.window_frames, asking for `kind`; adapting windows gather into
// `gather` where it is not null.
absl::Status WarmCall(Lane& lane, const PreparedModel& model, const CudaModel& cuda, const WarmUpShape& shape,
                      int64_t frames, AnswerKind kind, const WarmUpInputs& inputs, const LaneWarmUpTools& tools,
                      FmllrGatherTarget* gather) {
  std::vector<ScoreResult> results((frames + shape.window_frames - 1) / shape.window_frames);
  std::vector<ScoreWindow> windows;
  for (int64_t first = 0; first < frames; first += shape.window_frames) {
    const int64_t rows = std::min(shape.window_frames, frames - first);
    ScoreWindow window{.model = &model,
                       .features = ConstMatrixView(inputs.zeros.row(first), rows, model.dim()),
                       .result = &results[windows.size()],
                       .precision = shape.precision};
    if (kind == AnswerKind::kTopK) window.select.top_k = shape.top_k;
    window.half_from_best = kind == AnswerKind::kHalves;
    if (kind == AnswerKind::kAdapting) {
      window.transform = &inputs.transforms[windows.size()];
      window.gather = gather;
    }
    windows.push_back(window);
  }
  const ScoreOptions options{.frame_totals = kind == AnswerKind::kWhole || kind == AnswerKind::kAdapting};
  if (cuda.kind == CudaModel::Kind::kTied) {
    // The tied lane fills results sized by its caller (CudaBackend's PrepareResults).
    for (const ScoreWindow& window : windows) window.result->loglikes.Resize(window.features.rows, model.num_states());
    const std::vector<const TiedMixtureDevice*> resident(windows.size(), cuda.tied);
    return ScoreTiedOnLane(lane, windows, resident, options);
  }
  const std::vector<const DeviceModel*> resident(windows.size(), cuda.untied);
  WarmUpFusions paired;
  if (kind == AnswerKind::kFused) {
    GMM_ASSIGN_OR_RETURN(paired, PairWindows(windows));
  }
  return ScoreUntiedOnLane(lane, windows, resident, options, paired.jobs, tools.wgmma_available, tools.scores_pool);
}

// Sizes lane.gemm.slice_partials for a run of `model` of every length up to
// shape.frames, with the algorithm the batch plan picks for each: the
// doubling sizes miss the few lengths that slice more (by the launch's
// arithmetic on an H200, 369-838 frames of the 5000 x 256 x 36 model need up
// to 67 MB, the doubling sizes 51; stop 56 saw a 760-frame call of it take
// 68 ms at a ramp).
absl::Status ReserveSlicePartials(Lane& lane, const PreparedModel& model, const CudaModel& cuda,
                                  const WarmUpShape& shape, bool wgmma_available) {
  int64_t most = 0;
  for (int64_t frames = 1; frames <= shape.frames; ++frames) {
    const PlanWindow window{.model = cuda.untied,
                            .rows = frames,
                            .dim = static_cast<int>(model.dim()),
                            .num_states = cuda.untied->num_states,
                            .num_gaussians = cuda.untied->num_gaussians,
                            .precision = shape.precision};
    const BatchPlan plan = PlanBatch(absl::MakeConstSpan(&window, 1), {.wgmma_available = wgmma_available});
    GMM_ASSIGN_OR_RETURN(const int64_t floats,
                         SlicePartialFloats(*cuda.untied, plan.runs.front().algorithm, frames));
    most = std::max(most, floats);
  }
  return EnsureCapacity(lane.gemm.slice_partials, static_cast<size_t>(most));
}

// A batch of several models' short runs is one launch (split8, one job a
// model): this sizes its job table for a job a frame, the most a call of
// shape.frames can have, and loads the kernel with a launch of two 1-frame
// jobs: a launch of them all scores each job's one frame as a whole tile
// (with gathering at every size it made the 5000 x 256 x 36 model's warm-up
// 4.0-4.3 s a GPU instead of 2.5-2.6; docs/PERFORMANCE.md, stop 57). The
// jobs read the lane's features and write its scores, both sized by the
// calls before.
absl::Status WarmMultiModelLaunch(Lane& lane, const CudaModel& cuda, const WarmUpShape& shape) {
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.gemm.job_table, MultiModelJobTableBytes(shape.frames)));
  const DeviceModel& model = *cuda.untied;
  std::vector<LoglikJob> jobs;
  for (int64_t t = 0; t < std::min<int64_t>(2, shape.frames); ++t) {
    jobs.push_back({&model, lane.features.data() + t * model.dim, 1, lane.loglikes.data() + t * model.num_states});
  }
  GMM_RETURN_IF_ERROR(LaunchMultiModelLoglik(jobs, lane.gemm, lane.stream.get()));
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(lane.stream.get()), "run multi-model warm-up launch");
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> WarmUpSizes(int64_t frames) {
  std::vector<int64_t> sizes;
  for (int64_t size = 16; size < frames; size *= 2) sizes.push_back(size);
  if (frames > 0) sizes.push_back(frames);
  return sizes;
}

absl::Status WarmLane(Lane& lane, const PreparedModel& model, const CudaModel& cuda, const WarmUpShape& shape,
                      const LaneWarmUpTools& tools) {
  const bool untied = cuda.kind == CudaModel::Kind::kUntied;
  std::vector<AnswerKind> other_kinds;
  if (untied) {
    if (shape.top_k > 0 && shape.top_k < model.num_states()) other_kinds.push_back(AnswerKind::kTopK);
    other_kinds.insert(other_kinds.end(), {AnswerKind::kHalves, AnswerKind::kFused, AnswerKind::kAdapting});
    GMM_RETURN_IF_ERROR(ReserveSlicePartials(lane, model, cuda, shape, tools.wgmma_available));
  }
  GMM_ASSIGN_OR_RETURN(const WarmUpInputs inputs, MakeWarmUpInputs(model, shape, untied));
  // Whole answers at every size: each size picks its kernels and slices.
  // The other kinds' buffers grow with the frames, so their largest call
  // sizes them, and loads their kernels.
  const std::vector<int64_t> sizes = WarmUpSizes(shape.frames);
  for (int64_t frames : sizes) {
    GMM_RETURN_IF_ERROR(WarmCall(lane, model, cuda, shape, frames, AnswerKind::kWhole, inputs, tools, nullptr));
  }
  for (AnswerKind kind : other_kinds) {
    GMM_RETURN_IF_ERROR(WarmCall(lane, model, cuda, shape, shape.frames, kind, inputs, tools, nullptr));
  }
  if (tools.gather != nullptr) {
    // Sized for a full call, gathered in the smallest only (to load the
    // kernels): gathering is float64 work for each state a frame keeps, and
    // what must not happen under load is the buffers growing.
    const int64_t windows = (shape.frames + shape.window_frames - 1) / shape.window_frames;
    GMM_RETURN_IF_ERROR(
        ReserveGathers(lane, windows, GatherTermValues(shape.frames, static_cast<int>(model.dim()))));
    GMM_RETURN_IF_ERROR(
        WarmCall(lane, model, cuda, shape, sizes.front(), AnswerKind::kAdapting, inputs, tools, tools.gather));
  }
  if (untied) GMM_RETURN_IF_ERROR(WarmMultiModelLaunch(lane, cuda, shape));
  return absl::OkStatus();
}

}  // namespace gmmscore
