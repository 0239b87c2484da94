#include "kernels/score/feature_transform.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/score/feature_transform_reference.h"

namespace gmmscore {
namespace {

// A near-identity fMLLR-like transform at MFCC scale.
std::vector<float> RandomTransform(int dim, int cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> small(0.0f, 0.05f);
  std::normal_distribution<float> shift(0.0f, 2.0f);
  std::vector<float> values(dim * cols);
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j < cols; ++j) {
      values[i * cols + j] = j == dim ? shift(rng) : (i == j ? 1.0f : 0.0f) + small(rng);
    }
  }
  return values;
}

FloatMatrix RandomFeatures(int64_t frames, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> value(0.0f, 10.0f);
  FloatMatrix out(frames, dim);
  for (float& v : out.span()) v = value(rng);
  return out;
}

TEST(FeatureTransformTest, AffineMatchesReference) {
  for (int dim : {1, 13, 39, 40}) {
    std::vector<float> values = RandomTransform(dim, dim + 1, dim);
    absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(dim, dim + 1, values);
    ASSERT_TRUE(transform.ok()) << transform.status();
    FloatMatrix in = RandomFeatures(37, dim, 100 + dim);
    FloatMatrix out;
    ASSERT_TRUE(transform->Apply(in.view(), &out).ok());
    std::vector<double> ref = ReferenceTransform(dim, dim + 1, values, in.view());
    ASSERT_EQ(out.rows(), 37);
    for (int64_t i = 0; i < 37 * dim; ++i) {
      ASSERT_NEAR(out.data()[i], ref[i], 1e-4 * (1.0 + std::abs(ref[i]))) << "dim " << dim;
    }
  }
}

TEST(FeatureTransformTest, LinearOnlyMatchesReference) {
  std::vector<float> values = RandomTransform(5, 5, 9);
  absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(5, 5, values);
  ASSERT_TRUE(transform.ok());
  FloatMatrix in = RandomFeatures(4, 5, 10);
  FloatMatrix out;
  ASSERT_TRUE(transform->Apply(in.view(), &out).ok());
  std::vector<double> ref = ReferenceTransform(5, 5, values, in.view());
  for (int i = 0; i < 20; ++i) EXPECT_NEAR(out.data()[i], ref[i], 1e-4);
}

TEST(FeatureTransformTest, IdentityKeepsFramesAndZeroFramesWork) {
  std::vector<float> identity(3 * 4, 0.0f);
  for (int i = 0; i < 3; ++i) identity[i * 4 + i] = 1.0f;
  absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(3, 4, identity);
  ASSERT_TRUE(transform.ok());
  FloatMatrix in = RandomFeatures(6, 3, 11);
  FloatMatrix out;
  ASSERT_TRUE(transform->Apply(in.view(), &out).ok());
  EXPECT_EQ(out, in);
  ASSERT_TRUE(transform->Apply(FloatMatrix(0, 3).view(), &out).ok());
  EXPECT_EQ(out.rows(), 0);
}

TEST(FeatureTransformTest, RejectsBadShapesAndValues) {
  EXPECT_EQ(FeatureTransform::Create(3, 5, std::vector<float>(15)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FeatureTransform::Create(0, 1, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FeatureTransform::Create(3, 4, std::vector<float>(11)).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> values(12, 0.0f);
  values[7] = INFINITY;
  absl::Status status = FeatureTransform::Create(3, 4, values).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("row 1, column 3"), std::string::npos) << status;
}

TEST(FeatureTransformTest, RejectsFeaturesOfAnotherDimension) {
  absl::StatusOr<FeatureTransform> transform =
      FeatureTransform::Create(3, 4, std::vector<float>(12, 0.0f));
  ASSERT_TRUE(transform.ok());
  FloatMatrix out;
  EXPECT_EQ(transform->Apply(FloatMatrix(2, 4).view(), &out).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
