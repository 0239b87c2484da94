// BatchPlan without a GPU: layouts checked against a plain recount over
// random batches, and the runs, transforms, algorithms and copy-back ranges
// of hand-made ones.
#include "kernels/cuda/batch_plan.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/loglik_policy.h"

namespace gmmscore {
namespace {

// Three stand-in models (only their addresses matter to the plan).
int kModelA, kModelB, kModelC;

PlanWindow Window(const int* model, int64_t rows, int dim = 13, int states = 100,
                  int64_t gaussians = 3200) {
  return {.model = model, .rows = rows, .dim = dim, .num_states = states,
          .num_gaussians = gaussians};
}

TEST(BatchPlanTest, LayoutMatchesARecountOverRandomBatches) {
  std::mt19937 rng(7);
  const int* models[] = {&kModelA, &kModelB, &kModelC};
  for (int round = 0; round < 200; ++round) {
    std::vector<PlanWindow> windows;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int j = 0; j < n; ++j) {
      const int m = static_cast<int>(rng() % 3);
      PlanWindow w = Window(models[m], rng() % 4 == 0 ? 0 : 1 + rng() % 300, 13 + m, 50 + 7 * m);
      w.selected = rng() % 5 == 0;
      w.halved = !w.selected && rng() % 4 == 0;
      w.fused_only = !w.selected && !w.halved && rng() % 7 == 0;
      windows.push_back(w);
    }
    const bool totals = rng() % 2 == 0;
    const BatchPlan plan = PlanBatch(windows, {.frame_totals = totals});
    int64_t in = 0, scores = 0, frames = 0;
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(plan.in_offset[j], in);
      EXPECT_EQ(plan.scores_offset[j], scores);
      EXPECT_EQ(plan.totals_offset[j], frames);
      in += windows[j].rows * windows[j].dim;
      scores += windows[j].rows * windows[j].num_states;
      frames += windows[j].rows;
      EXPECT_EQ(plan.whole[j], !windows[j].selected && !windows[j].halved && !windows[j].fused_only);
    }
    EXPECT_EQ(plan.frame_floats, in);
    EXPECT_EQ(plan.in_floats, in);  // no transforms
    EXPECT_TRUE(plan.segments.empty());
    EXPECT_EQ(plan.scores_floats, scores);
    EXPECT_EQ(plan.total_frames, frames);
    EXPECT_EQ(plan.out_floats, scores + (totals ? frames : 0));
    // Runs: cover every window with frames exactly once, in order, each of
    // one model, never two adjacent runs of one model (empty windows do not
    // split a run).
    std::vector<int> covered(n, 0);
    int64_t run_frames = 0;
    for (size_t r = 0; r < plan.runs.size(); ++r) {
      const BatchPlan::Run& run = plan.runs[r];
      int64_t sum = 0;
      for (int j = run.first; j < run.end; ++j) {
        if (windows[j].rows == 0) continue;
        EXPECT_EQ(windows[j].model, windows[run.first].model);
        ++covered[j];
        sum += windows[j].rows;
      }
      EXPECT_GT(windows[run.first].rows, 0);
      EXPECT_EQ(run.frames, sum);
      run_frames += sum;
      if (r > 0) EXPECT_NE(windows[plan.runs[r - 1].first].model, windows[run.first].model);
    }
    EXPECT_EQ(run_frames, frames);
    for (int j = 0; j < n; ++j) EXPECT_EQ(covered[j], windows[j].rows > 0 ? 1 : 0) << j;
    // Copy-back: exactly the whole windows' scores and (with totals) the
    // totals, merged, in order, disjoint.
    std::vector<char> wanted(plan.out_floats, 0), copied(plan.out_floats, 0);
    for (int j = 0; j < n; ++j) {
      if (!plan.whole[j]) continue;
      const int64_t end = plan.scores_offset[j] + windows[j].rows * windows[j].num_states;
      for (int64_t i = plan.scores_offset[j]; i < end; ++i) wanted[i] = 1;
    }
    for (int64_t i = scores; i < plan.out_floats; ++i) wanted[i] = 1;
    int64_t last_end = -1;
    for (const auto& [first, end] : plan.copy_ranges) {
      EXPECT_LT(first, end);
      EXPECT_GT(first, last_end);  // merged: never adjacent, never overlapping
      last_end = end;
      for (int64_t i = first; i < end; ++i) copied[i] = 1;
    }
    EXPECT_EQ(copied, wanted);
  }
}

TEST(BatchPlanTest, ConsecutiveWindowsOfOneModelAndPrecisionAreOneRun) {
  std::vector<PlanWindow> windows = {Window(&kModelA, 10), Window(&kModelA, 0),
                                     Window(&kModelA, 5),  Window(&kModelB, 7),
                                     Window(&kModelA, 3),  Window(&kModelA, 4)};
  windows[5].precision = Precision::kFast;  // a new run: its own algorithm
  const BatchPlan plan = PlanBatch(windows, {});
  ASSERT_EQ(plan.runs.size(), 4u);
  EXPECT_EQ(plan.runs[0].first, 0);
  EXPECT_EQ(plan.runs[0].end, 3);
  EXPECT_EQ(plan.runs[0].frames, 15);
  EXPECT_EQ(plan.runs[1].first, 3);
  EXPECT_EQ(plan.runs[2].first, 4);
  EXPECT_EQ(plan.runs[2].frames, 3);
  EXPECT_EQ(plan.runs[3].first, 5);
}

TEST(BatchPlanTest, EachDistinctTransformIsPackedOnceAfterTheFrames) {
  const FeatureTransform t1 = *FeatureTransform::Create(2, 3, {1, 0, 0.5f, 0, 1, -1});
  const FeatureTransform t2 = *FeatureTransform::Create(2, 2, {2, 0, 0, 2});
  std::vector<PlanWindow> windows = {Window(&kModelA, 4, 2), Window(&kModelA, 3, 2),
                                     Window(&kModelA, 0, 2), Window(&kModelA, 2, 2)};
  windows[0].transform = &t1;
  windows[2].transform = &t2;  // an empty window's transform is never packed
  windows[3].transform = &t1;
  const BatchPlan plan = PlanBatch(windows, {});
  EXPECT_EQ(plan.frame_floats, 18);
  ASSERT_EQ(plan.transforms.size(), 1u);
  EXPECT_EQ(plan.transforms[0].first, &t1);
  EXPECT_EQ(plan.transforms[0].second, 18);
  EXPECT_EQ(plan.in_floats, 18 + PackedTransformFloats(2));
  ASSERT_EQ(plan.segments.size(), 3u);  // every window with frames, copies too
  EXPECT_EQ(plan.segments[0].first, 0);
  EXPECT_EQ(plan.segments[0].matrix, 18);
  EXPECT_EQ(plan.segments[1].first, 8);
  EXPECT_EQ(plan.segments[1].matrix, TransformSegment::kCopy);
  EXPECT_EQ(plan.segments[2].first, 14);
  EXPECT_EQ(plan.segments[2].matrix, 18);
  EXPECT_EQ(plan.max_segment_values, 8);
}

TEST(BatchPlanTest, AlgorithmsFollowThePolicy) {
  // Exact windows: kAuto (LaunchLoglik's choice); several short runs of
  // different models: one multi-model split8 launch.
  std::vector<PlanWindow> short_runs = {Window(&kModelA, 20), Window(&kModelB, 31)};
  BatchPlan plan = PlanBatch(short_runs, {});
  EXPECT_EQ(plan.runs[0].algorithm, Algorithm::kAuto);
  EXPECT_TRUE(plan.one_launch);
  // From 32 frames a run is fused8x2's, from 64 fused8x4's: one launch each.
  for (int64_t rows : {32, 63, 64, 300}) {
    short_runs[1].rows = rows;
    plan = PlanBatch(short_runs, {});
    EXPECT_FALSE(plan.one_launch) << rows;
  }
  short_runs[1].rows = 30;
  EXPECT_EQ(ChooseAlgorithm(31, 3200), Algorithm::kSplit8);
  EXPECT_EQ(ChooseAlgorithm(32, 3200), Algorithm::kFused8x2);
  EXPECT_EQ(ChooseAlgorithm(63, 3200), Algorithm::kFused8x2);
  EXPECT_EQ(ChooseAlgorithm(64, 3200), Algorithm::kFused8x4);
  // Fast precision on a wide model (>= 32 Gaussians a state), 256 frames:
  // wgmma_f16 where the device has it and the dimension fits, else the exact choice.
  std::vector<PlanWindow> fast = {Window(&kModelA, 256, 39, 100, 3200)};
  fast[0].precision = Precision::kFast;
  EXPECT_EQ(PlanBatch(fast, {.wgmma_available = true}).runs[0].algorithm, Algorithm::kWgmmaHalf);
  EXPECT_EQ(PlanBatch(fast, {.wgmma_available = false}).runs[0].algorithm, Algorithm::kAuto);
  fast[0].dim = 48;  // wider than the wgmma kernels take
  EXPECT_EQ(PlanBatch(fast, {.wgmma_available = true}).runs[0].algorithm, Algorithm::kAuto);
  // Fast precision's lengths (ChooseFastAlgorithm): 32 or more Gaussians a
  // state from 64 frames, narrower never.
  auto fast_choice = [](int64_t rows, int64_t gaussians_per_state) {
    std::vector<PlanWindow> one = {Window(&kModelA, rows, 36, 100, 100 * gaussians_per_state)};
    one[0].precision = Precision::kFast;
    return PlanBatch(one, {.wgmma_available = true}).runs[0].algorithm;
  };
  EXPECT_EQ(fast_choice(63, 256), Algorithm::kAuto);
  EXPECT_EQ(fast_choice(64, 256), Algorithm::kWgmmaHalf);
  EXPECT_EQ(fast_choice(160, 256), Algorithm::kWgmmaHalf);
  EXPECT_EQ(fast_choice(63, 32), Algorithm::kAuto);
  EXPECT_EQ(fast_choice(64, 32), Algorithm::kWgmmaHalf);
  EXPECT_EQ(fast_choice(4096, 31), Algorithm::kAuto);
  // The caller's algorithm wins, and one-launch needs split8 everywhere.
  const BatchPlan asked = PlanBatch(short_runs, {.requested = Algorithm::kFused16});
  EXPECT_EQ(asked.runs[0].algorithm, Algorithm::kFused16);
  EXPECT_FALSE(asked.one_launch);
  const BatchPlan split = PlanBatch(short_runs, {.requested = Algorithm::kSplit8});
  EXPECT_TRUE(split.one_launch);
  // The tied path asks for runs only.
  EXPECT_FALSE(PlanBatch(short_runs, {.choose_algorithms = false}).one_launch);
}

}  // namespace
}  // namespace gmmscore
