#include "client/load/connection_plan.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore::load {
namespace {

v1::StreamConfig Config(int top_k, bool float16, bool fused_only = false, float beam = 0) {
  v1::StreamConfig config;
  config.mutable_output()->set_top_k(top_k);
  config.mutable_output()->set_float16(float16);
  config.mutable_output()->set_fused_only(fused_only);
  config.mutable_output()->set_beam(beam);
  return config;
}

TEST(AnswerBytesTest, DenseMatricesAreStatesTimesValueBytes) {
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false), {5000}), 5000 * 4 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, true), {5000}), 5000 * 2 * 100.0);
  // A beam alone keeps an unknown number of states: the dense bound.
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false, false, 10), {5000}),
                   5000 * 4 * 100.0);
}

TEST(AnswerBytesTest, TopKKeepsAtMostTopKStatesWithTheirIds) {
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(100, false), {5000}), 100 * 6 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(100, true), {5000}), 100 * 4 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(100, false), {40}), 40 * 6 * 100.0);
}

TEST(AnswerBytesTest, SeveralModelsAddTheFusedMatrix) {
  // Fused models share their states (the server refuses others).
  const std::vector<int64_t> states = {5000, 5000, 5000};
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false), states), 4 * 5000 * 4 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false, true), states), 5000 * 4 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(100, true), states), 4 * 100 * 4 * 100.0);
  // One model sends its own matrix only, fused_only or not.
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false, true), {5000}), 5000 * 4 * 100.0);
  EXPECT_DOUBLE_EQ(AnswerBytesPerStreamSecond(Config(0, false), {}), 0.0);
}

// The points measured in stop 55 (docs/PERFORMANCE.md): a generator of 2000
// fast top_k streams on 8 connections, 1500 float32 streams on 47 (as
// before: one per 32), 1750 float16 on 28.
TEST(DefaultConnectionsTest, MeasuredPoints) {
  EXPECT_EQ(DefaultConnections(2000, AnswerBytesPerStreamSecond(Config(100, false), {5000})), 8);
  EXPECT_EQ(DefaultConnections(1500, AnswerBytesPerStreamSecond(Config(0, false), {5000})), 47);
  EXPECT_EQ(DefaultConnections(1750, AnswerBytesPerStreamSecond(Config(0, true), {5000})), 28);
  EXPECT_EQ(DefaultConnections(1, 2e6), 1);
  EXPECT_EQ(DefaultConnections(1, 0), 1);
  EXPECT_EQ(DefaultConnections(100000, 2e6), kMaxConnections);
}

// Any load: within 1..kMaxConnections, each connection under both budgets
// unless capped, and the fewest that are.
TEST(DefaultConnectionsTest, FewestWithinBothBudgets) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> streams_of(1, 20000);
  std::uniform_real_distribution<double> bytes_of(0, 4e6);
  auto fits = [](int connections, int streams, double bytes) {
    return streams <= connections * kStreamsPerConnection &&
           streams * bytes <= connections * kConnectionAnswerBytesPerS;
  };
  for (int i = 0; i < 10000; ++i) {
    const int streams = streams_of(rng);
    const double bytes = bytes_of(rng);
    const int c = DefaultConnections(streams, bytes);
    ASSERT_GE(c, 1);
    ASSERT_LE(c, kMaxConnections);
    if (c < kMaxConnections) ASSERT_TRUE(fits(c, streams, bytes)) << streams << " " << bytes;
    if (c > 1) ASSERT_FALSE(fits(c - 1, streams, bytes)) << streams << " " << bytes;
  }
}

}  // namespace
}  // namespace gmmscore::load
