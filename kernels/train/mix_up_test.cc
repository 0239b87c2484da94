#include "kernels/train/mix_up.h"

#include <cmath>
#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(MixUpTest, SplitsTheHeaviestKeepingWeightAndCentre) {
  NaturalState state{{0.7, 0.3}, {0, 0, 10, 10}, {4, 1, 1, 1}};
  std::mt19937_64 rng(3);
  ASSERT_TRUE(SplitState(4, 0.01, 2, rng, &state).ok());
  ASSERT_EQ(state.num_gaussians(), 4);
  EXPECT_NEAR(std::accumulate(state.weights.begin(), state.weights.end(), 0.0), 1.0, 1e-12);
  // 0.7 -> 0.35 + 0.35 (now heavier than 0.3? no: 0.35 > 0.3, so split again).
  EXPECT_THAT(state.weights, testing::ElementsAre(0.175, 0.3, 0.35, 0.175));
  // Children of Gaussian 0 are symmetric about its mean, at about 0.01 sigma.
  const double shift = state.means[2 * 2] - 0.0;  // Gaussian 2, dim 0
  EXPECT_GT(std::fabs(shift), 0.0);
  EXPECT_LT(std::fabs(shift), 0.1 * 2);
  EXPECT_EQ(state.variances[2 * 2], 4.0);
  EXPECT_FALSE(SplitState(3, 0.01, 2, rng, &state).ok());
  EXPECT_TRUE(SplitState(4, 0.01, 2, rng, &state).ok());
}

TEST(MixUpTest, TargetsFollowOccupancyPowerAndMinCount) {
  // Occupancies 1000, 100, 10 with power 1: most go to the first state; the
  // third may not split (2 * 20 >= 10).
  const std::vector<int> targets = SplitTargets({1000, 100, 10}, 12, 1.0, 20);
  EXPECT_EQ(std::accumulate(targets.begin(), targets.end(), 0), 12);
  EXPECT_EQ(targets[2], 1);
  EXPECT_GT(targets[0], targets[1]);
  // Too little data anywhere: stops short of the target.
  const std::vector<int> stuck = SplitTargets({30, 30}, 10, 0.2, 20);
  EXPECT_EQ(stuck, (std::vector<int>{1, 1}));
}

TEST(MixUpTest, MixUpModelChecksItsInput) {
  NaturalGmm gmm;
  gmm.dim = 1;
  gmm.states = {{{1.0}, {0.0}, {1.0}}, {{1.0}, {5.0}, {1.0}}};
  std::mt19937_64 rng(1);
  EXPECT_FALSE(MixUpModel({100}, 4, 0.01, 0.2, 20, rng, &gmm).ok());
  ASSERT_TRUE(MixUpModel({1000, 1000}, 4, 0.01, 0.2, 20, rng, &gmm).ok());
  EXPECT_EQ(gmm.num_gaussians(), 4);
}

}  // namespace
}  // namespace gmmscore
