#include "kernels/cuda/batch_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/wgmma_loglik_launch.h"

namespace gmmscore {
namespace {

void LayOutBuffers(absl::Span<const PlanWindow> windows, BatchPlan* plan) {
  const size_t n = windows.size();
  plan->in_offset.resize(n);
  plan->scores_offset.resize(n);
  plan->totals_offset.resize(n);
  for (size_t j = 0; j < n; ++j) {
    plan->in_offset[j] = plan->frame_floats;
    plan->scores_offset[j] = plan->scores_floats;
    plan->totals_offset[j] = plan->total_frames;
    plan->frame_floats += windows[j].rows * windows[j].dim;
    plan->scores_floats += windows[j].rows * windows[j].num_states;
    plan->total_frames += windows[j].rows;
  }
  plan->in_floats = plan->frame_floats;
  plan->out_floats = plan->scores_floats + (plan->frame_totals ? plan->total_frames : 0);
}

// Each distinct transform once, after the frames (a stream's chunks share
// theirs). When any window has one, every window's frames go through the
// transform pass (copied as they are where there is none), so that runs
// read one buffer.
void PlanTransforms(absl::Span<const PlanWindow> windows, BatchPlan* plan) {
  const bool any = std::any_of(windows.begin(), windows.end(),
                               [](const PlanWindow& w) { return w.transform != nullptr; });
  if (!any) return;
  absl::flat_hash_map<const FeatureTransform*, int64_t> offset_of;
  for (size_t j = 0; j < windows.size(); ++j) {
    const PlanWindow& window = windows[j];
    if (window.rows == 0) continue;
    int64_t matrix = TransformSegment::kCopy;
    if (window.transform != nullptr) {
      auto [it, added] = offset_of.try_emplace(window.transform, plan->in_floats);
      if (added) {
        plan->transforms.emplace_back(window.transform, plan->in_floats);
        plan->in_floats += PackedTransformFloats(window.transform->dim());
      }
      matrix = it->second;
    }
    plan->segments.push_back({plan->in_offset[j], window.rows, matrix, window.dim});
    plan->max_segment_values = std::max(plan->max_segment_values, window.rows * window.dim);
  }
}

// The algorithm a run is launched with: the caller's, else the one its
// precision and shape choose (kAuto where that is the exact policy's, so
// LaunchLoglik applies its fallbacks).
Algorithm RunAlgorithm(const PlanWindow& first, int64_t frames, const PlanOptions& options) {
  if (options.requested != Algorithm::kAuto || first.precision != Precision::kFast) {
    return options.requested;
  }
  // Wider features than the wgmma kernel takes are scored exactly.
  const bool wgmma_fits = options.wgmma_available && first.dim <= kWgmmaMaxDim;
  const Algorithm fast =
      ChooseFastAlgorithm(frames, first.num_gaussians, first.num_states, wgmma_fits);
  return fast == ChooseAlgorithm(frames, first.num_gaussians) ? Algorithm::kAuto : fast;
}

void PlanRuns(absl::Span<const PlanWindow> windows, const PlanOptions& options, BatchPlan* plan) {
  for (size_t j = 0; j < windows.size(); ++j) {
    if (windows[j].rows == 0) continue;
    if (!plan->runs.empty()) {
      BatchPlan::Run& last = plan->runs.back();
      const PlanWindow& first = windows[last.first];
      if (first.model == windows[j].model && first.precision == windows[j].precision) {
        last.end = static_cast<int>(j) + 1;
        last.frames += windows[j].rows;
        continue;
      }
    }
    plan->runs.push_back({static_cast<int>(j), static_cast<int>(j) + 1, windows[j].rows});
  }
  if (!options.choose_algorithms) return;
  // Several models in one launch when every run's algorithm is split8.
  bool all_split8 = plan->runs.size() >= 2;
  for (BatchPlan::Run& run : plan->runs) {
    const PlanWindow& first = windows[run.first];
    run.algorithm = RunAlgorithm(first, run.frames, options);
    const Algorithm chosen = run.algorithm == Algorithm::kAuto
                                 ? ChooseAlgorithm(run.frames, first.num_gaussians)
                                 : run.algorithm;
    all_split8 &= chosen == Algorithm::kSplit8;
  }
  plan->one_launch = all_split8;
}

void PlanCopyBack(absl::Span<const PlanWindow> windows, BatchPlan* plan) {
  const auto add = [plan](int64_t first, int64_t end) {
    std::vector<std::pair<int64_t, int64_t>>& ranges = plan->copy_ranges;
    if (first == end) return;
    if (!ranges.empty() && ranges.back().second == first) {
      ranges.back().second = end;
    } else {
      ranges.emplace_back(first, end);
    }
  };
  plan->whole.resize(windows.size());
  for (size_t j = 0; j < windows.size(); ++j) {
    plan->whole[j] = !windows[j].selected && !windows[j].halved && !windows[j].fused_only;
    if (plan->whole[j]) {
      add(plan->scores_offset[j],
          plan->scores_offset[j] + windows[j].rows * windows[j].num_states);
    }
  }
  if (plan->frame_totals) add(plan->scores_floats, plan->scores_floats + plan->total_frames);
}

}  // namespace

BatchPlan PlanBatch(absl::Span<const PlanWindow> windows, const PlanOptions& options) {
  BatchPlan plan;
  plan.frame_totals = options.frame_totals;
  LayOutBuffers(windows, &plan);
  PlanTransforms(windows, &plan);
  PlanRuns(windows, options, &plan);
  PlanCopyBack(windows, &plan);
  return plan;
}

}  // namespace gmmscore
