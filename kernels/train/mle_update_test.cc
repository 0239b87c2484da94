// MleUpdate against Kaldi's MleDiagGmmUpdate, case by case: the plain
// update, floors, low counts (removed, or kept when last or removal off),
// flags, empty states, bad statistics.
#include "kernels/train/mle_update.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// One state of three 2-d Gaussians with hand-made statistics.
NaturalGmm ThreeGaussians() {
  NaturalGmm gmm;
  gmm.dim = 2;
  gmm.states.push_back({{0.5, 0.3, 0.2}, {0, 0, 1, 1, 2, 2}, {1, 1, 1, 1, 1, 1}});
  return gmm;
}

GmmStats StatsFor(const std::vector<double>& occ, const std::vector<double>& mean,
                  const std::vector<double>& var) {
  GmmStats stats = GmmStats::ForShape(2, {0, static_cast<int64_t>(occ.size())});
  stats.occupancy = occ;
  stats.mean_acc = mean;
  stats.var_acc = var;
  return stats;
}

TEST(MleUpdateTest, PlainUpdateIsWeightMeanAndVarianceOfTheData) {
  // Gaussian 0: 100 frames of mean (1, -2) and variance (4, 0.5).
  const GmmStats stats = StatsFor({100, 300, 600},
                                  {100, -200, 300, 300, 600, 1200},
                                  {100 * (1 + 4), 100 * (4 + 0.5), 300 * 2, 300 * 2, 600 * 5, 600 * 5});
  MleReport report;
  auto next = MleUpdate(ThreeGaussians(), stats, MleOptions(), &report);
  ASSERT_TRUE(next.ok()) << next.status();
  const NaturalState& s = next->states[0];
  EXPECT_THAT(s.weights, testing::Pointwise(testing::DoubleNear(1e-12), std::vector<double>{0.1, 0.3, 0.6}));
  EXPECT_THAT(s.means, testing::Pointwise(testing::DoubleNear(1e-12), std::vector<double>{1, -2, 1, 1, 1, 2}));
  EXPECT_THAT(s.variances, testing::Pointwise(testing::DoubleNear(1e-12), std::vector<double>{4, 0.5, 1, 1, 4, 1}));
  EXPECT_EQ(report.floored_variances, 0);
  EXPECT_DOUBLE_EQ(report.occupancy, 1000);
}

TEST(MleUpdateTest, VariancesAreFlooredAndCounted) {
  // Gaussian 1 sees one repeated point: zero variance.
  const GmmStats stats = StatsFor({100, 50, 50}, {0, 0, 50, 50, 100, 100},
                                  {100, 100, 50, 50, 250, 250});
  MleOptions options;
  MleReport report;
  auto next = MleUpdate(ThreeGaussians(), stats, options, &report);
  ASSERT_TRUE(next.ok());
  EXPECT_DOUBLE_EQ(next->states[0].variances[2], options.min_variance);
  EXPECT_EQ(report.floored_variances, 2);
  options.variance_floor = {0.5, 0.25};
  next = MleUpdate(ThreeGaussians(), stats, options, &report);
  ASSERT_TRUE(next.ok());
  EXPECT_DOUBLE_EQ(next->states[0].variances[2], 0.5);
  EXPECT_DOUBLE_EQ(next->states[0].variances[3], 0.25);
  options.variance_floor = {0.5};
  EXPECT_EQ(MleUpdate(ThreeGaussians(), stats, options, &report).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MleUpdateTest, LowCountGaussiansAreRemovedWithAWarningButNeverTheLast) {
  const GmmStats stats = StatsFor({5, 500, 495}, {0, 0, 500, 500, 990, 990},
                                  {5, 5, 1000, 1000, 2970, 2970});
  MleReport report;
  auto next = MleUpdate(ThreeGaussians(), stats, MleOptions(), &report);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->states[0].num_gaussians(), 2);
  EXPECT_EQ(report.removed_gaussians, 1);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_THAT(report.warnings[0], testing::HasSubstr("state 0 Gaussian 0"));
  EXPECT_THAT(report.warnings[0], testing::HasSubstr("removed"));
  // Weights are renormalised when the model is built.
  auto model = next->ToModel();
  ASSERT_TRUE(model.ok()) << model.status();

  // All three too small: two go, the last stays with its old parameters.
  const GmmStats tiny = StatsFor({1, 2, 3}, {0, 0, 2, 2, 6, 6}, {1, 1, 2, 2, 12, 12});
  next = MleUpdate(ThreeGaussians(), tiny, MleOptions(), &report);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->states[0].num_gaussians(), 1);
  EXPECT_EQ(next->states[0].means, (std::vector<double>{2, 2}));
  EXPECT_THAT(report.warnings.back(), testing::HasSubstr("last Gaussian"));

  MleOptions keep;
  keep.remove_low_count_gaussians = false;
  next = MleUpdate(ThreeGaussians(), stats, keep, &report);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->states[0].num_gaussians(), 3);
  EXPECT_DOUBLE_EQ(next->states[0].weights[0], 0.005);
  EXPECT_EQ(next->states[0].means[0], 0.0);
}

TEST(MleUpdateTest, FlagsChooseWhatChanges) {
  const GmmStats stats = StatsFor({100, 300, 600}, {100, -200, 300, 300, 600, 1200},
                                  {500, 450, 600, 600, 3000, 3000});
  MleOptions options;
  options.update = kGmmVariances;  // around the old means, as Kaldi does
  MleReport report;
  auto next = MleUpdate(ThreeGaussians(), stats, options, &report);
  ASSERT_TRUE(next.ok());
  const NaturalState& s = next->states[0];
  EXPECT_EQ(s.weights, ThreeGaussians().states[0].weights);
  EXPECT_EQ(s.means, ThreeGaussians().states[0].means);
  // Gaussian 0, dim 0: E[x^2] - m^2 + (m_old - m)^2 = 5 - 1 + 1 = 5.
  EXPECT_NEAR(s.variances[0], 5.0, 1e-12);
  options.update = kGmmWeights;
  next = MleUpdate(ThreeGaussians(), stats, options, &report);
  EXPECT_EQ(next->states[0].means, ThreeGaussians().states[0].means);
  EXPECT_NEAR(next->states[0].weights[2], 0.6, 1e-12);
  EXPECT_EQ(*ParseUpdateFlags("mvw"), kGmmMeans | kGmmVariances | kGmmWeights);
  EXPECT_FALSE(ParseUpdateFlags("mx").ok());
  EXPECT_FALSE(ParseUpdateFlags("").ok());
}

TEST(MleUpdateTest, EmptyStatesStayAndBadStatisticsAreRefused) {
  NaturalGmm two = ThreeGaussians();
  two.states.push_back(two.states[0]);
  GmmStats stats = GmmStats::ForShape(2, {0, 3, 6});
  for (int g = 0; g < 3; ++g) stats.occupancy[g] = 100;
  MleReport report;
  auto next = MleUpdate(two, stats, MleOptions(), &report);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->states[1].means, two.states[1].means);
  EXPECT_EQ(report.empty_states, 1);
  stats.var_acc[4] = NAN;
  EXPECT_EQ(MleUpdate(two, stats, MleOptions(), &report).status().code(),
            absl::StatusCode::kInvalidArgument);
  const GmmStats wrong = GmmStats::ForShape(2, {0, 3});
  const absl::Status status = MleUpdate(two, wrong, MleOptions(), &report).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), testing::HasSubstr("do not fit the model"));
}

}  // namespace
}  // namespace gmmscore
