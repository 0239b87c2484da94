#include "kernels/score/scoring_backend.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/core/feature_values.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

TEST(ScoringBackendTest, AlgorithmNamesRoundTrip) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kFused8, Algorithm::kFused16, Algorithm::kFused32, Algorithm::kFused8x2,
                      Algorithm::kFused8x4, Algorithm::kSplit8, Algorithm::kTf32x3, Algorithm::kWgmma, Algorithm::kWgmmaHalf,
                      Algorithm::kGemm}) {
    auto parsed = ParseAlgorithm(AlgorithmName(a));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_THAT(ParseAlgorithm("fused64").status().message(), HasSubstr("unknown algorithm"));
}

TEST(ScoringBackendTest, PrecisionNamesRoundTripAndFp32MeansExact) {
  for (Precision p : {Precision::kExact, Precision::kFast}) {
    auto parsed = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  auto fp32 = ParsePrecision("fp32");
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(*fp32, Precision::kExact);
  EXPECT_EQ(ParsePrecision("fp16").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParsePrecision("fp16").status().message(), HasSubstr("unknown precision 'fp16'"));
}

TEST(ScoringBackendTest, ValidateFeaturesNamesTheBadValue) {
  auto model = GenerateSyntheticModel({.num_states = 2, .dim = 13, .seed = 1});
  ASSERT_TRUE(model.ok());
  FloatMatrix features = GenerateSyntheticFeatures(*model, 4, 2);
  EXPECT_TRUE(ValidateFeatures(*model, features.view()).ok());
  features.at(2, 7) = NAN;
  EXPECT_THAT(ValidateFeatures(*model, features.view()).message(),
              HasSubstr("frame 2, dimension 7"));
  features.at(2, 7) = INFINITY;
  EXPECT_EQ(ValidateFeatures(*model, features.view()).code(), absl::StatusCode::kInvalidArgument);
  FloatMatrix wrong(3, 12);
  EXPECT_THAT(ValidateFeatures(*model, wrong.view()).message(), HasSubstr("dimension 12"));
}

// Finite values whose squares overflow float32 made NaN scores (issue 16):
// refused by the same rule as NaN, right at the boundary.
TEST(ScoringBackendTest, ValidateFeaturesRefusesValuesWhoseSquareOverflows) {
  auto model = GenerateSyntheticModel({.num_states = 2, .dim = 13, .seed = 1});
  ASSERT_TRUE(model.ok());
  FloatMatrix features = GenerateSyntheticFeatures(*model, 4, 2);
  EXPECT_TRUE(std::isfinite(kMaxFeatureMagnitude * kMaxFeatureMagnitude));
  EXPECT_FALSE(std::isfinite(std::nextafter(kMaxFeatureMagnitude, INFINITY) *
                             std::nextafter(kMaxFeatureMagnitude, INFINITY)));
  for (const float bad : {3e38f, -3e38f, std::nextafter(kMaxFeatureMagnitude, INFINITY)}) {
    features.at(1, 3) = bad;
    const absl::Status status = ValidateFeatures(*model, features.view());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("frame 1, dimension 3"));
    EXPECT_THAT(status.message(), HasSubstr(kFeatureValueRule));
  }
  features.at(1, 3) = -kMaxFeatureMagnitude;
  EXPECT_TRUE(ValidateFeatures(*model, features.view()).ok());
}

TEST(ScoringBackendTest, FrameTotalsAreLogSumExpOverStates) {
  FloatMatrix ll(2, 3);
  ll.at(0, 0) = -1000.0f; ll.at(0, 1) = -1000.0f; ll.at(0, 2) = -2000.0f;
  ll.at(1, 0) = 0.0f;     ll.at(1, 1) = std::log(3.0f); ll.at(1, 2) = -INFINITY;
  std::vector<float> totals = ComputeFrameTotals(ll);
  EXPECT_NEAR(totals[0], -1000.0 + std::log(2.0), 1e-3);
  EXPECT_NEAR(totals[1], std::log(4.0), 1e-6);
}

TEST(ScoringBackendTest, DetachFromBlocksCopiesScoresOffTheirBlock) {
  int released = 0;
  auto block = std::shared_ptr<float>(new float[12], [&released](float* p) {
    ++released;
    delete[] p;
  });
  for (int i = 0; i < 12; ++i) block.get()[i] = static_cast<float>(i);
  ScoreResult result;
  result.loglikes = FloatMatrix::OnBlock(std::shared_ptr<float>(block, block.get() + 2), 2, 3);
  result.half = HalfScores{.num_states = 2,
                           .values = BlockArray<uint16_t>::OnBlock(
                               std::shared_ptr<uint16_t>(block, reinterpret_cast<uint16_t*>(block.get() + 8)), 4),
                           .frame_best = {0.0f, 0.0f}};
  const std::vector<uint16_t> halves(result.half->values.begin(), result.half->values.end());
  block.reset();
  DetachFromBlocks(&result);
  EXPECT_EQ(released, 1) << "the block goes once nothing reads it";
  EXPECT_FALSE(result.loglikes.on_block());
  EXPECT_FALSE(result.half->values.on_block());
  EXPECT_EQ(result.loglikes.rows(), 2);
  EXPECT_EQ(result.loglikes.at(1, 2), 7.0f);
  EXPECT_EQ(std::vector<uint16_t>(result.half->values.begin(), result.half->values.end()), halves);

  ScoreResult own;  // nothing on a block: left as it is
  own.loglikes = FloatMatrix(1, 2, 5.0f);
  const float* floats = own.loglikes.data();
  DetachFromBlocks(&own);
  EXPECT_EQ(own.loglikes.data(), floats);
}

}  // namespace
}  // namespace gmmscore
