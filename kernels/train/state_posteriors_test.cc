#include "kernels/train/state_posteriors.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

FloatMatrix Scores(std::vector<std::vector<float>> rows) {
  FloatMatrix m(rows.size(), rows[0].size());
  for (size_t t = 0; t < rows.size(); ++t) std::copy(rows[t].begin(), rows[t].end(), m.row(t));
  return m;
}

TEST(StatePosteriorsTest, SoftmaxOverStatesWithTheFloor) {
  // Posteriors of frame 0: 1/(1+e^-1+e^-10) ... ; state 2 is below 1e-3.
  const FloatMatrix s = Scores({{-5.0f, -6.0f, -15.0f}, {2.0f, 2.0f, 2.0f}});
  const std::vector<StatsPair> pairs = PairsFromScores(s.view(), {});
  ASSERT_EQ(pairs.size(), 5u);
  const double z = 1 + std::exp(-1.0) + std::exp(-10.0);
  EXPECT_EQ(pairs[0].frame, 0);
  EXPECT_EQ(pairs[0].target, 0);
  EXPECT_NEAR(pairs[0].weight, 1 / z, 1e-6);
  EXPECT_NEAR(pairs[1].weight, std::exp(-1.0) / z, 1e-6);
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(pairs[i].frame, 1);
    EXPECT_NEAR(pairs[i].weight, 1.0 / 3, 1e-6);
  }
}

TEST(StatePosteriorsTest, SilenceStatesAndThreshold) {
  const FloatMatrix s = Scores({{0.0f, 0.0f, 0.0f, 0.0f}, {5.0f, 0.0f, 0.0f, 0.0f}});
  PosteriorPolicy policy{.silence_states = {0}};
  std::vector<StatsPair> pairs = PairsFromScores(s.view(), policy);
  for (const StatsPair& p : pairs) EXPECT_NE(p.target, 0);
  EXPECT_EQ(pairs.size(), 6u);
  // Frame 1's silence mass is e^5/(e^5+3) ~ 0.98: a threshold of 0.9 drops it whole.
  policy.silence_threshold = 0.9;
  pairs = PairsFromScores(s.view(), policy);
  ASSERT_EQ(pairs.size(), 3u);
  for (const StatsPair& p : pairs) EXPECT_EQ(p.frame, 0);
  // Frame 0's silence mass is exactly 1/4: a threshold of 0.25 drops it too.
  policy.silence_threshold = 0.25;
  EXPECT_TRUE(PairsFromScores(s.view(), policy).empty());
}

TEST(StatePosteriorsTest, SparseAnswersGiveTheDenseSoftmaxOverKeptStates) {
  const FloatMatrix dense = Scores({{1.0f, -3.0f, 0.5f}});
  SparseScores sparse;
  sparse.num_states = 3;
  sparse.frame_offsets = {0, 2};
  sparse.state_ids = {0, 2};
  sparse.values = {1.0f, 0.5f};
  const std::vector<StatsPair> got = PairsFromSparse(sparse, {});
  ASSERT_EQ(got.size(), 2u);
  const double z = std::exp(1.0) + std::exp(0.5);
  EXPECT_EQ(got[1].target, 2);
  EXPECT_NEAR(got[0].weight, std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(got[1].weight, std::exp(0.5) / z, 1e-6);
}

TEST(StatePosteriorsTest, NonFiniteRowsGiveNothing) {
  const float inf = INFINITY;
  const FloatMatrix s = Scores({{-inf, -inf}, {NAN, 0.0f}});
  EXPECT_TRUE(PairsFromScores(s.view(), {}).empty() || PairsFromScores(s.view(), {}).size() <= 1);
  for (const StatsPair& p : PairsFromScores(s.view(), {})) EXPECT_TRUE(std::isfinite(p.weight));
}

TEST(StatePosteriorsTest, DecoderPairsAreCheckedAndFiltered) {
  PosteriorPolicy policy{.silence_states = {1}, .silence_threshold = 0.5};
  const StatsPair good[] = {{0, 0, 0.7f}, {0, 1, 0.3f}, {1, 1, 0.6f}, {1, 2, 0.4f}, {2, 2, 0.0f}};
  absl::StatusOr<std::vector<StatsPair>> kept = PairsFromDecoder(good, 3, 3, policy);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);  // frame 1 is mostly silence; frame 2's weight is 0
  EXPECT_EQ((*kept)[0].frame, 0);
  EXPECT_EQ((*kept)[0].target, 0);
  const StatsPair bad_frame[] = {{3, 0, 1.0f}};
  EXPECT_EQ(PairsFromDecoder(bad_frame, 3, 3, policy).status().code(), absl::StatusCode::kInvalidArgument);
  const StatsPair bad_state[] = {{0, 3, 1.0f}};
  EXPECT_EQ(PairsFromDecoder(bad_state, 3, 3, policy).status().code(), absl::StatusCode::kInvalidArgument);
  const StatsPair bad_weight[] = {{0, 0, NAN}};
  EXPECT_EQ(PairsFromDecoder(bad_weight, 3, 3, policy).status().code(), absl::StatusCode::kInvalidArgument);
  const StatsPair negative[] = {{0, 0, -0.1f}};
  EXPECT_EQ(PairsFromDecoder(negative, 3, 3, policy).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatePosteriorsTest, PolicyValidation) {
  EXPECT_TRUE(ValidatePosteriorPolicy({.silence_states = {0, 4}}, 5).ok());
  EXPECT_EQ(ValidatePosteriorPolicy({.silence_states = {5}}, 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidatePosteriorPolicy({.silence_states = {-1}}, 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidatePosteriorPolicy({.silence_threshold = 1.5}, 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidatePosteriorPolicy({.min_posterior = 1.0}, 5).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
