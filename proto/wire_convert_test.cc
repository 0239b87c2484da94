#include "proto/wire_convert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "proto/half_float.h"

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

TEST(WireConvertTest, PcmSamplesAreLittleEndianBytes) {
  const std::vector<int16_t> samples = {0, 1, -2, 258, -32768, 32767};
  v1::PcmAudio audio;
  PcmToProto(samples, 16000, &audio);
  EXPECT_EQ(audio.sample_rate(), 16000u);
  EXPECT_EQ(audio.pcm16(), std::string("\x00\x00\x01\x00\xfe\xff\x02\x01\x00\x80\xff\x7f", 12));
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

// Half-precision answers: half the value bytes, every value within 2^-11 of
// its distance from the frame's best (the best itself exact), dense and
// sparse, with -inf states, an all -inf frame and a frame far below zero.
TEST(WireConvertTest, HalfPrecisionScoresRoundTripWithinTheirBound) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(3);
  std::normal_distribution<float> value(-90.0f, 30.0f);
  FloatMatrix scores(4, 37);
  for (int64_t i = 0; i < scores.rows() * scores.cols(); ++i) scores.data()[i] = value(rng);
  scores.at(0, 5) = -kInf;
  for (int64_t s = 0; s < scores.cols(); ++s) scores.at(1, s) = -kInf;
  scores.at(2, 0) = -2e6f;  // 2e6 below the best: saturates
  for (int64_t s = 0; s < scores.cols(); ++s) scores.at(3, s) -= 1e5f;
  const std::vector<float> totals = {1, 2, 3, 4};
  for (const StateSelection& keep : {StateSelection{}, StateSelection{.top_k = 9}}) {
    v1::StateScores full, half;
    ScoresToProto("m", scores, totals, &full, keep);
    ScoresToProto("m", scores, totals, &half, keep, ValueEncoding::kHalfFromBest);
    EXPECT_EQ(half.loglikes_size(), 0);
    EXPECT_EQ(half.loglikes_f16().size(), 2u * full.loglikes_size());
    ASSERT_EQ(half.frame_best_size(), 4);
    EXPECT_EQ(half.frame_best(1), 0.0f) << "an all -inf frame is sent as it is";
    EXPECT_EQ(std::vector<float>(half.frame_totals().begin(), half.frame_totals().end()), totals);
    EXPECT_EQ(Ids(half), Ids(full));
    absl::StatusOr<FloatMatrix> want = ScoresFromProto(full);
    absl::StatusOr<FloatMatrix> got = ScoresFromProto(half);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status();
    for (int64_t t = 0; t < scores.rows(); ++t) {
      float best = -kInf;
      for (int64_t s = 0; s < scores.cols(); ++s) best = std::max(best, want->at(t, s));
      if (std::isfinite(best)) EXPECT_EQ(half.frame_best(static_cast<int>(t)), best);
      for (int64_t s = 0; s < scores.cols(); ++s) {
        const float w = want->at(t, s), g = got->at(t, s);
        if (!std::isfinite(w)) {
          EXPECT_EQ(g, w) << t << "," << s;
        } else if (best - w > kLargestHalf) {
          EXPECT_EQ(g, best - kLargestHalf) << "saturated at " << t << "," << s;
        } else {
          // 2^-11 of the distance, plus float32 rounding of the sum.
          EXPECT_LE(std::fabs(g - w), std::ldexp(best - w, -11) + 1e-7f * std::fabs(w) + 1e-30f)
              << t << "," << s;
          if (w == best) EXPECT_EQ(g, w);
        }
      }
    }
  }
}

// Scores encoded before they reach the answer (on a GPU) go out as the
// same bytes as scores encoded while the answer is built, including an
// all -inf frame, -inf states, saturated distances and no frames at all.
TEST(WireConvertTest, HalfScoresMadeElsewhereSendTheSameBytes) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  std::normal_distribution<float> value(-70.0f, 25.0f);
  for (const auto& [frames, states] : std::vector<std::pair<int, int>>{{5, 41}, {1, 1}, {0, 7}, {3, 5000}}) {
    FloatMatrix scores(frames, states);
    for (int64_t i = 0; i < scores.rows() * scores.cols(); ++i) scores.data()[i] = value(rng);
    if (frames >= 3) {
      for (int64_t s = 0; s < states; ++s) scores.at(1, s) = -kInf;
      scores.at(0, 0) = -kInf;
      scores.at(2, states - 1) = -1e6f;  // saturates
    }
    std::vector<float> totals(frames);
    for (int t = 0; t < frames; ++t) totals[t] = value(rng);
    v1::StateScores here, elsewhere;
    ScoresToProto("m", scores, totals, &here, {}, ValueEncoding::kHalfFromBest);
    const HalfScores half = HalfScoresFromFloats(scores);
    ASSERT_EQ(half.num_frames(), frames);
    ASSERT_EQ(half.values.size(), static_cast<size_t>(frames) * states);
    HalfScoresToProto("m", half, totals, &elsewhere);
    EXPECT_EQ(elsewhere.SerializeAsString(), here.SerializeAsString()) << frames << " x " << states;
    // Overwrites whatever the message held.
    ScoresToProto("other", scores, {}, &elsewhere);
    HalfScoresToProto("m", half, totals, &elsewhere);
    EXPECT_EQ(elsewhere.SerializeAsString(), here.SerializeAsString()) << frames << " x " << states;
  }
}

TEST(WireConvertTest, MalformedHalfPrecisionScoresAreRejected) {
  v1::StateScores good;
  ScoresToProto("m", SparseExample(), {}, &good, {}, ValueEncoding::kHalfFromBest);
  ASSERT_TRUE(ScoresFromProto(good).ok());
  v1::StateScores bad = good;
  bad.mutable_loglikes_f16()->pop_back();
  EXPECT_FALSE(ScoresFromProto(bad).ok()) << "an odd byte count";
  bad = good;
  bad.mutable_loglikes_f16()->resize(good.loglikes_f16().size() - 2);
  EXPECT_FALSE(ScoresFromProto(bad).ok()) << "a value missing";
  bad = good;
  bad.mutable_frame_best()->RemoveLast();
  EXPECT_FALSE(ScoresFromProto(bad).ok()) << "a best missing";
  bad = good;
  bad.add_loglikes(1.0f);
  EXPECT_FALSE(ScoresFromProto(bad).ok()) << "float values beside halves";
  ScoresToProto("m", SparseExample(), {}, &bad, {.top_k = 2}, ValueEncoding::kHalfFromBest);
  ASSERT_TRUE(ScoresFromProto(bad).ok());
  bad.mutable_loglikes_f16()->append("xy");
  EXPECT_FALSE(ScoresFromProto(bad).ok()) << "a sparse value too many";
}

}  // namespace
}  // namespace gmmscore
