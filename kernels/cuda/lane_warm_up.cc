#include "kernels/cuda/lane_warm_up.h"

#include <algorithm>

#include "kernels/core/matrix.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/batch_plan.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_launch.h"

namespace gmmscore {
namespace {

// How a warm-up call asks for its answers.
enum class AnswerKind { kWhole, kTopK, kHalves };

// One call of `frames` zero frames of `model` on `lane`, in windows of
// shape.window_frames, asking for `kind`.
absl::Status WarmCall(Lane& lane, const PreparedModel& model, const CudaModel& cuda, const WarmUpShape& shape,
                      int64_t frames, AnswerKind kind, bool wgmma_available, PinnedBlockPool* scores_pool) {
  FloatMatrix zeros(frames, model.dim());
  std::vector<ScoreResult> results((frames + shape.window_frames - 1) / shape.window_frames);
  std::vector<ScoreWindow> windows;
  for (int64_t first = 0; first < frames; first += shape.window_frames) {
    const int64_t rows = std::min(shape.window_frames, frames - first);
    ScoreWindow window{.model = &model,
                       .features = ConstMatrixView(zeros.row(first), rows, model.dim()),
                       .result = &results[windows.size()],
                       .precision = shape.precision};
    if (kind == AnswerKind::kTopK) window.select.top_k = shape.top_k;
    window.half_from_best = kind == AnswerKind::kHalves;
    windows.push_back(window);
  }
  const ScoreOptions options{.frame_totals = kind == AnswerKind::kWhole};
  if (cuda.kind == CudaModel::Kind::kTied) {
    // The tied lane fills results sized by its caller (CudaBackend's PrepareResults).
    for (const ScoreWindow& window : windows) window.result->loglikes.Resize(window.features.rows, model.num_states());
    const std::vector<const TiedMixtureDevice*> resident(windows.size(), cuda.tied);
    return ScoreTiedOnLane(lane, windows, resident, options);
  }
  const std::vector<const DeviceModel*> resident(windows.size(), cuda.untied);
  return ScoreUntiedOnLane(lane, windows, resident, options, {}, wgmma_available, scores_pool);
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

}  // namespace

std::vector<int64_t> WarmUpSizes(int64_t frames) {
  std::vector<int64_t> sizes;
  for (int64_t size = 16; size < frames; size *= 2) sizes.push_back(size);
  if (frames > 0) sizes.push_back(frames);
  return sizes;
}

absl::Status WarmLane(Lane& lane, const PreparedModel& model, const CudaModel& cuda, const WarmUpShape& shape,
                      bool wgmma_available, PinnedBlockPool* scores_pool) {
  std::vector<AnswerKind> kinds = {AnswerKind::kWhole};
  if (cuda.kind == CudaModel::Kind::kUntied) {
    if (shape.top_k > 0 && shape.top_k < model.num_states()) kinds.push_back(AnswerKind::kTopK);
    kinds.push_back(AnswerKind::kHalves);
    GMM_RETURN_IF_ERROR(ReserveSlicePartials(lane, model, cuda, shape, wgmma_available));
  }
  for (AnswerKind kind : kinds) {
    for (int64_t frames : WarmUpSizes(shape.frames)) {
      GMM_RETURN_IF_ERROR(WarmCall(lane, model, cuda, shape, frames, kind, wgmma_available, scores_pool));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
