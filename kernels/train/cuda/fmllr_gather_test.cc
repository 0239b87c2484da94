// fMLLR statistics gathered by the CUDA backend while it scores
// (kernels/score/fmllr_gather.h) against the float64 reference
// (AccumulateFmllrStatsReference) over the pairs PairsFromScores takes from
// the very scores the backend returned. GPU cases skip without a device; the
// CPU backend's refusals run everywhere.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/fmllr_gather.h"
#include "kernels/train/fmllr_reference.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/fmllr_test_util.h"
#include "kernels/train/state_posteriors.h"

namespace gmmscore {
namespace {

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

std::shared_ptr<const DiagGmmModel> Model(int states, int max_gaussians, int dim, uint64_t seed) {
  SyntheticModelSpec spec{.num_states = states, .min_gaussians = 1, .max_gaussians = max_gaussians,
                          .dim = dim, .seed = seed};
  return std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(spec));
}

FmllrStats Taken(FmllrGatherTarget& target, int segment) {
  std::vector<double> sums(FmllrGatherValues(target.dim()), 0.0);
  const absl::Status taken = target.Take(segment, absl::MakeSpan(sums));
  EXPECT_TRUE(taken.ok()) << taken;
  absl::StatusOr<FmllrStats> stats = FmllrStatsFromGathered(target.dim(), sums);
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? *std::move(stats) : FmllrStats::ForDim(target.dim());
}

// One window of the test batch and what the reference adds for it.
struct Case {
  int64_t rows;
  int target;   // index into the targets
  int segment;
  bool transform;
};

class FmllrGatherTest : public ::testing::TestWithParam<int> {};

// Windows of 1 to 300 frames (past the gram kernel's frame tile), two
// targets (one with silence states and a threshold), both segments, a
// window with a speaker transform (statistics of its raw frames, posteriors
// from its transformed scores), and a window that does not gather between
// them: every segment equals the float64 reference over the pairs of the
// scores that came back.
TEST_P(FmllrGatherTest, SegmentsMatchFloat64ReferenceOnTheirOwnScores) {
  SKIP_WITHOUT_GPU();
  const int dim = GetParam();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed << " dim " << dim);
  std::mt19937_64 rng(seed);
  const std::shared_ptr<const DiagGmmModel> model = Model(60, 40, dim, seed);
  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status();
  absl::StatusOr<std::shared_ptr<const PreparedModel>> prepared = (*backend)->Prepare(model);
  ASSERT_TRUE(prepared.ok()) << prepared.status();

  std::vector<PosteriorPolicy> policies(2);
  policies[1].silence_states = {0, 3, 7};
  policies[1].silence_threshold = 0.5;
  policies[1].min_posterior = 1e-4;
  std::vector<std::unique_ptr<FmllrGatherTarget>> targets;
  for (const PosteriorPolicy& policy : policies) {
    auto target = (*backend)->CreateFmllrGather(**prepared, policy);
    ASSERT_TRUE(target.ok()) << target.status();
    targets.push_back(*std::move(target));
  }
  const std::vector<Case> cases = {{1, 0, 0, false},  {37, 1, 0, false}, {300, 0, 1, false},
                                   {0, 0, 1, false},  {64, 1, 1, true},  {5, 0, 0, true},
                                   {129, 1, 0, false}};
  const std::vector<float> transform_values = GenerateSyntheticTransform(dim, true, seed);
  const absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(dim, dim + 1, transform_values);
  ASSERT_TRUE(transform.ok()) << transform.status();

  std::vector<FloatMatrix> frames;
  std::vector<ScoreResult> results(cases.size() + 1);
  for (size_t c = 0; c < cases.size(); ++c) {
    frames.push_back(GenerateSyntheticFeatures(*model, cases[c].rows, seed + c));
  }
  FloatMatrix plain = GenerateSyntheticFeatures(*model, 20, seed + 99);
  std::vector<ScoreWindow> windows;
  for (size_t c = 0; c < cases.size(); ++c) {
    windows.push_back({.model = prepared->get(),
                       .features = frames[c].view(),
                       .result = &results[c],
                       .transform = cases[c].transform ? &*transform : nullptr,
                       .gather = targets[cases[c].target].get(),
                       .gather_segment = cases[c].segment});
    if (c == 2) windows.push_back({.model = prepared->get(), .features = plain.view(), .result = &results.back()});
  }
  ASSERT_TRUE((*backend)->ScoreBatch(windows, {}).ok());

  std::vector<std::vector<FmllrStats>> want(targets.size());
  for (auto& per_target : want) per_target.assign(FmllrGatherTarget::kSegments, FmllrStats::ForDim(dim));
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<StatsPair> pairs =
        PairsFromScores(results[c].loglikes.view(), policies[cases[c].target]);
    if (pairs.empty()) continue;  // to the accumulators, no pairs means every frame
    ASSERT_TRUE(AccumulateFmllrStatsReference(*model, frames[c].view(), pairs,
                                              &want[cases[c].target][cases[c].segment])
                    .ok());
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    for (int k = 0; k < FmllrGatherTarget::kSegments; ++k) {
      SCOPED_TRACE(testing::Message() << "target " << t << " segment " << k);
      const FmllrStats got = Taken(*targets[t], k);
      EXPECT_GT(want[t][k].beta, 0.0);
      EXPECT_NEAR(got.beta, want[t][k].beta, 1e-9 * want[t][k].beta);
      EXPECT_LT(MaxStatsError(got, want[t][k]), 1e-9);
      // Taken means zeroed: a second read adds nothing.
      const FmllrStats again = Taken(*targets[t], k);
      EXPECT_EQ(again.beta, 0.0);
      for (double v : again.g) ASSERT_EQ(v, 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dims, FmllrGatherTest, ::testing::Values(1, 13, 39, 64));

// Repeated batches add up: three calls into one segment equal the reference
// over all their frames, and the other segment stays empty.
TEST(FmllrGatherSumsTest, CallsAddUpInOneSegment) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  const std::shared_ptr<const DiagGmmModel> model = Model(200, 32, 39, seed);
  auto backend = CreateCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto prepared = (*backend)->Prepare(model);
  ASSERT_TRUE(prepared.ok());
  auto target = (*backend)->CreateFmllrGather(**prepared, {});
  ASSERT_TRUE(target.ok()) << target.status();
  FmllrStats want = FmllrStats::ForDim(39);
  for (int call = 0; call < 3; ++call) {
    const FloatMatrix frames = GenerateSyntheticFeatures(*model, 10 + 45 * call, seed + call);
    ScoreResult result;
    const ScoreWindow window{.model = prepared->get(), .features = frames.view(), .result = &result,
                             .gather = target->get(), .gather_segment = 1};
    ASSERT_TRUE((*backend)->ScoreBatch(absl::MakeConstSpan(&window, 1), {}).ok());
    const std::vector<StatsPair> pairs = PairsFromScores(result.loglikes.view(), {});
    ASSERT_TRUE(AccumulateFmllrStatsReference(*model, frames.view(), pairs, &want).ok());
  }
  EXPECT_LT(MaxStatsError(Taken(**target, 1), want), 1e-9);
  EXPECT_EQ(Taken(**target, 0).beta, 0.0);
}

// Frames that keep hundreds of states (a model of 600 identical states:
// every posterior 1/600, over the 1e-3 floor), so that the terms kernel's
// list of kept states fills and is emptied several times per frame.
TEST(FmllrGatherFlatTest, FramesKeepingHundredsOfStatesMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const int dim = 13, states = 600;
  DiagGmmModelBuilder builder(dim);
  std::vector<double> means(2 * dim), variances(2 * dim);
  for (int i = 0; i < 2 * dim; ++i) {
    means[i] = 0.3 * (i % 7) - (i < dim ? 1.0 : -1.0);
    variances[i] = 0.5 + 0.1 * (i % 5);
  }
  for (int s = 0; s < states; ++s) ASSERT_TRUE(builder.AddState({0.4, 0.6}, means, variances).ok());
  absl::StatusOr<DiagGmmModel> built = std::move(builder).Build();
  ASSERT_TRUE(built.ok()) << built.status();
  const auto model = std::make_shared<const DiagGmmModel>(*std::move(built));
  auto backend = CreateCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto prepared = (*backend)->Prepare(model);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  PosteriorPolicy with_silence;
  with_silence.silence_states = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  with_silence.silence_threshold = 0.5;
  for (const PosteriorPolicy& policy : {PosteriorPolicy{}, with_silence}) {
    auto target = (*backend)->CreateFmllrGather(**prepared, policy);
    ASSERT_TRUE(target.ok()) << target.status();
    FmllrStats want = FmllrStats::ForDim(dim);
    for (int64_t rows : {37, 130}) {
      const FloatMatrix frames = GenerateSyntheticFeatures(*model, rows, 11 + rows);
      ScoreResult result;
      const ScoreWindow window{.model = prepared->get(), .features = frames.view(),
                               .result = &result, .gather = target->get()};
      ASSERT_TRUE((*backend)->ScoreBatch(absl::MakeConstSpan(&window, 1), {}).ok());
      const std::vector<StatsPair> pairs = PairsFromScores(result.loglikes.view(), policy);
      ASSERT_GT(pairs.size(), static_cast<size_t>(500 * rows));
      ASSERT_TRUE(AccumulateFmllrStatsReference(*model, frames.view(), pairs, &want).ok());
    }
    const FmllrStats got = Taken(**target, 0);
    EXPECT_NEAR(got.beta, want.beta, 1e-9 * want.beta);
    EXPECT_LT(MaxStatsError(got, want), 1e-9);
  }
}

TEST(FmllrGatherErrorsTest, BadSegmentsTargetsAndPolicies) {
  SKIP_WITHOUT_GPU();
  const std::shared_ptr<const DiagGmmModel> model = Model(20, 4, 13, 7);
  const std::shared_ptr<const DiagGmmModel> other = Model(20, 4, 13, 8);
  auto backend = CreateCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto prepared = (*backend)->Prepare(model);
  auto prepared_other = (*backend)->Prepare(other);
  ASSERT_TRUE(prepared.ok() && prepared_other.ok());
  auto target = (*backend)->CreateFmllrGather(**prepared, {});
  ASSERT_TRUE(target.ok());
  std::vector<double> sums(FmllrGatherValues(13));
  EXPECT_EQ((*target)->Take(2, absl::MakeSpan(sums)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*target)->Take(0, absl::MakeSpan(sums).subspan(1)).code(),
            absl::StatusCode::kInvalidArgument);
  PosteriorPolicy bad;
  bad.silence_states = {20};
  EXPECT_EQ((*backend)->CreateFmllrGather(**prepared, bad).status().code(),
            absl::StatusCode::kInvalidArgument);

  const FloatMatrix frames = GenerateSyntheticFeatures(*other, 4, 1);
  ScoreResult result;
  ScoreWindow window{.model = prepared_other->get(), .features = frames.view(), .result = &result,
                     .gather = target->get()};
  EXPECT_EQ((*backend)->ScoreBatch(absl::MakeConstSpan(&window, 1), {}).code(),
            absl::StatusCode::kInvalidArgument);
  window.model = prepared->get();
  window.gather_segment = FmllrGatherTarget::kSegments;
  EXPECT_EQ((*backend)->ScoreBatch(absl::MakeConstSpan(&window, 1), {}).code(),
            absl::StatusCode::kInvalidArgument);
  // Nothing was gathered by the refused calls.
  EXPECT_EQ(Taken(**target, 0).beta, 0.0);
}

// The CPU backend leaves gathering to the daemon: it makes no target and
// refuses a window that asks it to gather (runs without a GPU).
TEST(FmllrGatherErrorsTest, CpuBackendDoesNotGather) {
  const std::shared_ptr<const DiagGmmModel> model = Model(10, 4, 13, 3);
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend();
  auto prepared = cpu->Prepare(model);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(cpu->CreateFmllrGather(**prepared, {}).status().code(), absl::StatusCode::kUnimplemented);
  class Foreign : public FmllrGatherTarget {
   public:
    int dim() const override { return 13; }
    absl::Status Take(int, absl::Span<double>) override { return absl::OkStatus(); }
  } foreign;
  const FloatMatrix frames = GenerateSyntheticFeatures(*model, 3, 1);
  ScoreResult result;
  const ScoreWindow window{.model = prepared->get(), .features = frames.view(), .result = &result,
                           .gather = &foreign};
  EXPECT_EQ(cpu->ScoreBatch(absl::MakeConstSpan(&window, 1), {}).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gmmscore
