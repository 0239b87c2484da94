#include "proto/wire_convert.h"

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

}  // namespace
}  // namespace gmmscore
