// The CPU statistics against the float64 reference: awkward shapes, the
// three modes (global, alignment, posteriors), several sets, bad requests,
// determinism and no drift over 10^7 frames.
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cpu_stats_backend.h"
#include "kernels/train/stats_reference.h"
#include "kernels/train/stats_test_util.h"

namespace gmmscore {
namespace {

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

DiagGmmModel Model(int states, int min_g, int max_g, int dim, uint64_t seed) {
  SyntheticModelSpec spec{.num_states = states, .min_gaussians = min_g, .max_gaussians = max_g,
                          .dim = dim, .seed = seed};
  return *GenerateSyntheticModel(spec);
}

// Largest error of `a` against `b`. Each Gaussian's sums are compared as
// the statistics it stands for, at the scale of at least one frame of data:
// occupancy relative to max(occ, 1), sum gx relative to sqrt(n sum gx^2)
// with n = max(occ, 1) (its Cauchy-Schwarz bound), sum gx^2 relative to
// itself scaled the same way. A Gaussian with a small fraction of one
// frame's posterior (a far tail, removed by any update) thus counts by the
// error it would cause in a frame's worth of statistics.
double MaxRelativeError(const GmmStats& a, const GmmStats& b) {
  double worst = 0.0;
  const int dim = b.dim;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const double occ = b.occupancy[r];
    const double scale = std::max(std::fabs(occ), 1.0) / std::max(std::fabs(occ), 1e-300);
    worst = std::max(worst, std::fabs(a.occupancy[r] - occ) / std::max(std::fabs(occ), 1.0));
    for (int d = 0; d < dim; ++d) {
      const int64_t i = r * dim + d;
      const double var_scale = std::fabs(b.var_acc[i]) * scale + 1e-30;
      const double mean_scale = std::sqrt(std::max(std::fabs(occ), 1.0) * var_scale) + 1e-30;
      worst = std::max(worst, std::fabs(a.mean_acc[i] - b.mean_acc[i]) / mean_scale);
      worst = std::max(worst, std::fabs(a.var_acc[i] - b.var_acc[i]) / var_scale);
    }
  }
  return worst;
}

void ExpectMatchesReference(const DiagGmmModel& model, const FloatMatrix& frames,
                            const std::vector<StatsPair>& pairs, int sets, double tolerance) {
  auto reference = CreateReferenceStatsBackend();
  auto cpu = CreateCpuStatsBackend();
  const GmmStats want = Accumulated(*reference, model, frames, pairs, sets);
  const GmmStats got = Accumulated(*cpu, model, frames, pairs, sets);
  const double error = MaxRelativeError(got, want);
  EXPECT_LT(error, tolerance);
  std::printf("max relative error %.3g\n", error);
  EXPECT_NEAR(got.total_loglike, want.total_loglike, 1e-5 * std::fabs(want.total_loglike) + 1e-6);
  EXPECT_DOUBLE_EQ(got.total_weight, want.total_weight);
}

struct Shape {
  int dim, gauss;
  int64_t frames;
};

TEST(CpuStatsTest, GlobalGmmMatchesReferenceOnAwkwardShapes) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  for (const Shape& s : {Shape{13, 1, 1}, Shape{39, 3, 63}, Shape{40, 64, 65}, Shape{39, 2048, 300},
                         Shape{13, 3, 100000}, Shape{40, 64, 4097}}) {
    SCOPED_TRACE(testing::Message() << "D " << s.dim << " M " << s.gauss << " T " << s.frames);
    const DiagGmmModel model = Model(1, s.gauss, s.gauss, s.dim, seed);
    const FloatMatrix frames = GenerateSyntheticFeatures(model, s.frames, seed + 1);
    ExpectMatchesReference(model, frames, {}, 1, 2e-6);
  }
}

TEST(CpuStatsTest, AlignmentWithStatesThatGetNoFrames) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const DiagGmmModel model = Model(50, 1, 9, 39, seed);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 3001, seed + 2);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < frames.rows(); ++t) {
    // Only even states below 30: the others get nothing.
    pairs.push_back({t, static_cast<int32_t>(2 * (rng() % 15)), 1.0f});
  }
  ExpectMatchesReference(model, frames, pairs, 1, 2e-6);
  const GmmStats stats = Accumulated(*CreateCpuStatsBackend(), model, frames, pairs, 1);
  EXPECT_EQ(stats.StateOccupancy(0, 31), 0.0);
}

TEST(CpuStatsTest, PosteriorsWithZeroWeightsAndSeveralSets) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const DiagGmmModel model = Model(20, 2, 6, 13, seed);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 777, seed + 3);
  std::vector<StatsPair> pairs;
  const int sets = 3;
  for (int t = 0; t < frames.rows(); ++t) {
    const int set = static_cast<int>(rng() % sets);
    for (int k = 0; k < 3; ++k) {
      const float w = (k == 2) ? 0.0f : unit(rng);
      pairs.push_back({t, static_cast<int32_t>(set * 20 + rng() % 20), w});
    }
  }
  ExpectMatchesReference(model, frames, pairs, sets, 2e-6);
}

TEST(CpuStatsTest, AddsToWhatIsThereAndIsDeterministic) {
  const DiagGmmModel model = Model(1, 64, 64, 39, 5);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 20000, 6);
  auto cpu = CreateCpuStatsBackend({.num_threads = 3});
  const GmmStats once = Accumulated(*cpu, model, frames, {}, 1);
  const GmmStats again = Accumulated(*cpu, model, frames, {}, 1);
  EXPECT_EQ(once.occupancy, again.occupancy);
  EXPECT_EQ(once.mean_acc, again.mean_acc);
  EXPECT_EQ(once.var_acc, again.var_acc);
  auto block = cpu->LoadFrames(frames.view());
  GmmStats twice = once;
  ASSERT_TRUE(cpu->Accumulate(**block, {}, &twice).ok());
  for (size_t i = 0; i < once.mean_acc.size(); ++i) {
    EXPECT_NEAR(twice.mean_acc[i], 2 * once.mean_acc[i], 1e-12 * std::fabs(once.mean_acc[i]) + 1e-12);
  }
  EXPECT_EQ(twice.total_weight, 2 * once.total_weight);
}

TEST(CpuStatsTest, BadRequestsAreRefusedBeforeAnythingIsAdded) {
  const DiagGmmModel model = Model(4, 2, 2, 13, 9);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 10, 1);
  std::vector<std::unique_ptr<StatsBackend>> backends;
  backends.push_back(CreateCpuStatsBackend());
  backends.push_back(CreateReferenceStatsBackend());
  for (const auto& backend : backends) {
    SCOPED_TRACE(backend->name());
    auto block = backend->LoadFrames(frames.view());
    GmmStats stats = GmmStats::ForModel(model);
    EXPECT_EQ(backend->Accumulate(**block, {{0, 0, 1.0f}}, &stats).code(),
              absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(backend->SetModel(model).ok());
    const GmmStats before = stats;
    for (const std::vector<StatsPair>& bad :
         {std::vector<StatsPair>{}, {{10, 0, 1.0f}}, {{-1, 0, 1.0f}}, {{0, 4, 1.0f}},
          {{0, 1, NAN}}, {{0, 1, 1.0f}, {1, -2, 1.0f}}}) {
      EXPECT_EQ(backend->Accumulate(**block, bad, &stats).code(), absl::StatusCode::kInvalidArgument);
    }
    GmmStats wrong = GmmStats::ForModel(Model(4, 3, 3, 13, 9));
    EXPECT_EQ(backend->Accumulate(**block, {{0, 0, 1.0f}}, &wrong).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(stats.occupancy, before.occupancy);
    FloatMatrix poisoned = frames;
    poisoned.row(3)[5] = NAN;
    EXPECT_EQ(backend->LoadFrames(poisoned.view()).status().code(), absl::StatusCode::kInvalidArgument);
    FloatMatrix wide(2, 14);
    auto wide_block = backend->LoadFrames(wide.view());
    EXPECT_EQ(backend->Accumulate(**wide_block, {{0, 0, 1.0f}}, &stats).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// 10^7 frames in one block (fewer under the sanitizer): the float64
// accumulation of per-block float32 sums does not drift.
TEST(CpuStatsTest, NoDriftOverTenMillionFrames) {
#if defined(__SANITIZE_ADDRESS__)
  const int64_t kFrames = 1000000;
#else
  const int64_t kFrames = 10000000;
#endif
  const int dim = 13;
  const DiagGmmModel model = Model(1, 2, 2, dim, 11);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, kFrames, 12);
  auto reference = CreateReferenceStatsBackend();
  const GmmStats want = Accumulated(*reference, model, frames, {}, 1);
  const GmmStats got = Accumulated(*CreateCpuStatsBackend(), model, frames, {}, 1);
  double worst = 0.0;
  for (size_t i = 0; i < want.occupancy.size(); ++i) {
    worst = std::max(worst, std::fabs(got.occupancy[i] / want.occupancy[i] - 1));
  }
  for (size_t i = 0; i < want.var_acc.size(); ++i) {
    worst = std::max(worst, std::fabs(got.var_acc[i] / want.var_acc[i] - 1));
  }
  EXPECT_LT(worst, 1e-6) << "over " << kFrames << " frames";
  RecordProperty("max_relative_error", testing::PrintToString(worst));
}

}  // namespace
}  // namespace gmmscore
