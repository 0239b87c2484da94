// BatchPlan: where every window of one CUDA backend call goes, decided on
// the host before anything is copied or launched: the layout of the lane's
// input buffer (frames, then each distinct speaker transform once) and of its
// output buffer (scores run after run, then all frame totals), the runs of
// consecutive windows of one model that one launch scores as one long
// window, each run's algorithm, and which output ranges are copied back.
// Pure host code with no CUDA calls, so it is tested without a GPU
// (batch_plan_test.cc, in CI).
//
//   std::vector<PlanWindow> windows = ...;   // one per ScoreWindow
//   BatchPlan plan = PlanBatch(windows, {.frame_totals = true, ...});
//   ... pack frames at plan.in_offset[j], launch plan.runs, copy plan.copy_ranges ...
//
// Why consecutive windows of one model become one run: the scheduler's batch
// of many streams' chunks of one model is then one launch that reads the
// model once for all of them (docs/PERFORMANCE.md).
#ifndef GMMSCORE_KERNELS_CUDA_BATCH_PLAN_H_
#define GMMSCORE_KERNELS_CUDA_BATCH_PLAN_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "kernels/cuda/feature_transform_launch.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// What the plan needs to know of one window.
struct PlanWindow {
  // The model's identity: consecutive windows of one model (and precision)
  // form one run.
  const void* model = nullptr;
  int64_t rows = 0;
  int dim = 0;
  int num_states = 0;
  int64_t num_gaussians = 0;  // of the model as the kernels see it (the algorithm choice)
  Precision precision = Precision::kExact;
  // Applied on the device (packed into the input buffer); null: none.
  const FeatureTransform* transform = nullptr;
  // Its top_k states are selected on the device: only they come back.
  bool selected = false;
  // Encoded in half precision on the device (DeviceHalves): its float32
  // scores do not come back.
  bool halved = false;
  // In a fusion that wants no model scores: its scores never come back.
  bool fused_only = false;
};

struct PlanOptions {
  // Every run's frame totals are computed (asked for, or needed by a
  // posterior fusion) and copied back.
  bool frame_totals = false;
  // Choose an algorithm per run (the untied path); false: runs only.
  bool choose_algorithms = true;
  // The caller's ScoreOptions::algorithm: kAuto lets each run's precision
  // and shape choose.
  Algorithm requested = Algorithm::kAuto;
  // A compute-capability-9.0 device (the wgmma kernel exists there only).
  bool wgmma_available = false;
};

struct BatchPlan {
  // One launch's windows [first, end) of one model and precision, `frames`
  // in all (empty windows inside a run add nothing; runs of no frames are
  // not made).
  struct Run {
    int first = 0;
    int end = 0;
    int64_t frames = 0;
    // kAuto: LaunchLoglik's own choice (and fallbacks) for the run's length.
    Algorithm algorithm = Algorithm::kAuto;
  };

  // Input buffer, in floats: window j's frames at in_offset[j] (rows x dim,
  // packed), all frames in the first frame_floats; then each distinct
  // transform (packed A^T and b) at transforms[i].second.
  std::vector<int64_t> in_offset;
  int64_t frame_floats = 0;
  int64_t in_floats = 0;
  std::vector<std::pair<const FeatureTransform*, int64_t>> transforms;
  // With any transform, one segment per window of frames (a copy for those
  // without one), so that every run reads the one transformed buffer; empty
  // otherwise. max_segment_values: the largest rows x dim among them.
  std::vector<TransformSegment> segments;
  int64_t max_segment_values = 0;

  // Output buffer, in floats: window j's scores at scores_offset[j] (rows x
  // states), all scores in the first scores_floats; with frame totals, window
  // j's at scores_floats + totals_offset[j].
  std::vector<int64_t> scores_offset;
  std::vector<int64_t> totals_offset;
  int64_t scores_floats = 0;
  int64_t total_frames = 0;
  int64_t out_floats = 0;
  bool frame_totals = false;

  std::vector<Run> runs;
  // Every run in one multi-model launch: two or more runs, each split8
  // (asked for, or kAuto's choice for its length).
  bool one_launch = false;

  // Per window: its scores come back whole (not selected, not halved, not
  // fused only).
  std::vector<bool> whole;
  // [first, end) of the output buffer to copy back, adjacent ranges merged:
  // every whole window's scores, then (with frame totals) every total.
  std::vector<std::pair<int64_t, int64_t>> copy_ranges;
};

BatchPlan PlanBatch(absl::Span<const PlanWindow> windows, const PlanOptions& options);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_BATCH_PLAN_H_
