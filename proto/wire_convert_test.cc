#include "proto/wire_convert.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(WireConvertTest, FeaturesRoundTrip) {
  FloatMatrix frames(3, 2);
  for (int i = 0; i < 6; ++i) frames.data()[i] = 0.5f * i;
  v1::FeatureMatrix proto;
  FeaturesToProto(frames.view(), &proto);
  EXPECT_EQ(proto.num_frames(), 3u);
  EXPECT_EQ(proto.dim(), 2u);
  absl::StatusOr<FloatMatrix> back = FeaturesFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, frames);
}

TEST(WireConvertTest, FeaturesWithWrongValueCountAreRejected) {
  v1::FeatureMatrix proto;
  proto.set_num_frames(2);
  proto.set_dim(3);
  proto.add_values(1.0f);
  absl::StatusOr<FloatMatrix> back = FeaturesFromProto(proto);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(back.status().message().find("carries 1 values"), std::string::npos);
}

TEST(WireConvertTest, FramesWithoutDimAreRejected) {
  v1::FeatureMatrix proto;
  proto.set_num_frames(2);
  EXPECT_EQ(FeaturesFromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WireConvertTest, ScoresRoundTrip) {
  FloatMatrix scores(2, 3);
  for (int i = 0; i < 6; ++i) scores.data()[i] = -1.0f * i;
  std::vector<float> totals = {1.0f, 2.0f};
  v1::StateScores proto;
  ScoresToProto("m", scores, totals, &proto);
  EXPECT_EQ(proto.model(), "m");
  EXPECT_EQ(proto.frame_totals_size(), 2);
  absl::StatusOr<FloatMatrix> back = ScoresFromProto(proto);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, scores);
  proto.add_loglikes(0.0f);
  EXPECT_FALSE(ScoresFromProto(proto).ok());
}

// Frame 0: 0 -3 -1 -10 -2; frame 1: -5 -5 -4 0.5 -20 (a tie at -5).
FloatMatrix SparseExample() {
  FloatMatrix scores(2, 5);
  const float values[] = {0, -3, -1, -10, -2, -5, -5, -4, 0.5f, -20};
  std::copy(values, values + 10, scores.data());
  return scores;
}

std::vector<uint32_t> Ids(const v1::StateScores& proto) {
  return {proto.state_ids().begin(), proto.state_ids().end()};
}

TEST(WireConvertTest, BeamKeepsStatesNearEachFramesBest) {
  const FloatMatrix scores = SparseExample();
  v1::StateScores proto;
  ScoresToProto("m", scores, {}, &proto, {.beam = 3.0f});
  // Frame 0 keeps >= -3: states 0 1 2 4; frame 1 keeps >= -2.5: state 3.
  EXPECT_EQ(Ids(proto), (std::vector<uint32_t>{0, 1, 2, 4, 3}));
  EXPECT_EQ(std::vector<uint32_t>(proto.frame_offsets().begin(), proto.frame_offsets().end()),
            (std::vector<uint32_t>{0, 4, 5}));
  absl::StatusOr<FloatMatrix> back = ScoresFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t s = 0; s < 5; ++s) {
      const bool kept = t == 0 ? s != 3 : s == 3;
      if (kept) {
        EXPECT_EQ(back->at(t, s), scores.at(t, s));
      } else {
        EXPECT_EQ(back->at(t, s), -std::numeric_limits<float>::infinity());
      }
    }
  }
}

TEST(WireConvertTest, TopKKeepsTheBestWithTiesToTheLowerState) {
  v1::StateScores proto;
  ScoresToProto("m", SparseExample(), {}, &proto, {.top_k = 3});
  // Frame 0: 0, -1, -2 (states 0 2 4); frame 1: 0.5, -4, then -5 of state 0.
  EXPECT_EQ(Ids(proto), (std::vector<uint32_t>{0, 2, 4, 0, 2, 3}));
  // Both limits: beam 1.5 leaves frame 0 with states 0 and 2.
  ScoresToProto("m", SparseExample(), {}, &proto, {.beam = 1.5f, .top_k = 3});
  EXPECT_EQ(Ids(proto), (std::vector<uint32_t>{0, 2, 3}));
  // A dense answer after a sparse one into the same message has no ids.
  ScoresToProto("m", SparseExample(), {}, &proto);
  EXPECT_EQ(proto.state_ids_size(), 0);
  EXPECT_EQ(proto.loglikes_size(), 10);
}

TEST(WireConvertTest, MalformedSparseScoresAreRejected) {
  v1::StateScores good;
  ScoresToProto("m", SparseExample(), {}, &good, {.top_k = 2});
  ASSERT_TRUE(ScoresFromProto(good).ok());
  auto expect_rejected = [](const v1::StateScores& proto, const char* what) {
    absl::StatusOr<FloatMatrix> back = ScoresFromProto(proto);
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument) << what;
  };
  v1::StateScores bad = good;
  bad.mutable_frame_offsets()->RemoveLast();
  expect_rejected(bad, "an offset missing");
  bad = good;
  bad.set_state_ids(0, 7);
  expect_rejected(bad, "a state id out of range");
  bad = good;
  std::swap(*bad.mutable_state_ids()->Mutable(0), *bad.mutable_state_ids()->Mutable(1));
  expect_rejected(bad, "state ids out of order");
  bad = good;
  bad.add_loglikes(1.0f);
  expect_rejected(bad, "a value too many");
  bad = good;
  bad.set_frame_offsets(1, 5);
  expect_rejected(bad, "an offset past the ids (and going backwards)");
}

}  // namespace
}  // namespace gmmscore
