#include "kernels/model/synthetic_model.h"

#include <cmath>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(SyntheticModelTest, SameSeedSameModel) {
  SyntheticModelSpec spec{.num_states = 20, .min_gaussians = 1, .max_gaussians = 8, .dim = 39, .seed = 11};
  auto a = GenerateSyntheticModel(spec);
  auto b = GenerateSyntheticModel(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->num_gaussians(), b->num_gaussians());
  for (int64_t i = 0; i < a->params().rows * a->params().cols; ++i) {
    ASSERT_EQ(a->params().data[i], b->params().data[i]);
  }
  spec.seed = 12;
  auto c = GenerateSyntheticModel(spec);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->gconst(0), c->gconst(0));
}

TEST(SyntheticModelTest, GaussianCountsSpanTheRange) {
  auto model = GenerateSyntheticModel({.num_states = 400, .min_gaussians = 1, .max_gaussians = 256,
                                       .dim = 13, .seed = 2});
  ASSERT_TRUE(model.ok());
  int smallest = 1000, largest = 0;
  for (int s = 0; s < model->num_states(); ++s) {
    smallest = std::min(smallest, model->num_gaussians_in_state(s));
    largest = std::max(largest, model->num_gaussians_in_state(s));
  }
  EXPECT_LE(smallest, 5);
  EXPECT_GE(largest, 250);
  EXPECT_LE(largest, 256);
}

TEST(SyntheticModelTest, FeaturesAreFiniteAndCepstrumScaled) {
  auto model = GenerateSyntheticModel({.num_states = 50, .dim = 39, .seed = 4});
  ASSERT_TRUE(model.ok());
  FloatMatrix features = GenerateSyntheticFeatures(*model, 500, 9);
  ASSERT_EQ(features.rows(), 500);
  ASSERT_EQ(features.cols(), 39);
  double c0 = 0.0;
  for (int64_t t = 0; t < 500; ++t) {
    for (int d = 0; d < 39; ++d) ASSERT_TRUE(std::isfinite(features.at(t, d)));
    c0 += features.at(t, 0);
  }
  EXPECT_NEAR(c0 / 500, 50.0, 10.0);
}

TEST(SyntheticModelTest, RejectsBadSpecs) {
  EXPECT_FALSE(GenerateSyntheticModel({.num_states = 0}).ok());
  EXPECT_FALSE(GenerateSyntheticModel({.min_gaussians = 4, .max_gaussians = 2}).ok());
  EXPECT_FALSE(GenerateSyntheticModel({.dim = 0}).ok());
}

}  // namespace
}  // namespace gmmscore
