#include "kernels/train/map_update.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

NaturalGmm OneState() {
  NaturalGmm gmm;
  gmm.dim = 1;
  gmm.states.push_back({{0.5, 0.5}, {0.0, 10.0}, {1.0, 2.0}});
  return gmm;
}

GmmStats Stats() {
  // Gaussian 0: 10 frames of mean 2, variance 3 (E[x^2] = 7); Gaussian 1: none.
  GmmStats stats = GmmStats::ForShape(1, {0, 2});
  stats.occupancy = {10, 0};
  stats.mean_acc = {20, 0};
  stats.var_acc = {70, 0};
  return stats;
}

TEST(MapUpdateTest, MeansOnlyByDefaultWithTau) {
  auto next = MapUpdate(OneState(), Stats(), MapOptions());
  ASSERT_TRUE(next.ok()) << next.status();
  // (20 + 10 * 0) / (10 + 10) = 1.
  EXPECT_DOUBLE_EQ(next->states[0].means[0], 1.0);
  EXPECT_DOUBLE_EQ(next->states[0].means[1], 10.0);  // no data: unchanged
  EXPECT_EQ(next->states[0].variances, OneState().states[0].variances);
  EXPECT_EQ(next->states[0].weights, OneState().states[0].weights);
}

TEST(MapUpdateTest, AllParametersAsKaldi) {
  MapOptions options;
  options.update = kGmmMeans | kGmmVariances | kGmmWeights;
  auto next = MapUpdate(OneState(), Stats(), options);
  ASSERT_TRUE(next.ok());
  const NaturalState& s = next->states[0];
  // weights: (10 + 10 * 0.5) / (10 + 10) = 0.75 and (0 + 5) / 20 = 0.25.
  EXPECT_DOUBLE_EQ(s.weights[0], 0.75);
  EXPECT_DOUBLE_EQ(s.weights[1], 0.25);
  // variance around mu = 1: E[x^2] - 2 mu E[x] + mu^2 = 7 - 4 + 1 = 4;
  // (10 * 4 + 50 * 1) / 60 = 1.5.
  EXPECT_DOUBLE_EQ(s.variances[0], 1.5);
  // tau 0 is the ML estimate.
  options.mean_tau = 0;
  EXPECT_DOUBLE_EQ(MapUpdate(OneState(), Stats(), options)->states[0].means[0], 2.0);
  options.mean_tau = -1;
  EXPECT_FALSE(MapUpdate(OneState(), Stats(), options).ok());
  EXPECT_FALSE(MapUpdate(OneState(), Stats(), MapOptions(), /*set=*/1).ok());
}

}  // namespace
}  // namespace gmmscore
