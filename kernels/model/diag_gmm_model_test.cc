#include "kernels/model/diag_gmm_model.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr double kLog2Pi = 1.8378770664093454835606594728112;

// A one-state, two-Gaussian, two-dimensional model from natural parameters.
absl::StatusOr<DiagGmmModel> TinyModel(std::vector<double> weights, std::vector<double> variances) {
  DiagGmmModelBuilder builder(2);
  if (absl::Status s = builder.AddState(weights, {1.0, -2.0, 3.0, 0.5}, variances); !s.ok()) return s;
  return std::move(builder).Build();
}

TEST(DiagGmmModelTest, ScoringFormMatchesTheFormulae) {
  auto model = TinyModel({0.25, 0.75}, {2.0, 0.5, 1.5, 4.0});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->dim(), 2);
  EXPECT_EQ(model->num_states(), 1);
  EXPECT_EQ(model->num_gaussians(), 2);
  EXPECT_EQ(model->max_gaussians_per_state(), 2);
  // Centre is the average mean: (1+3)/2, (-2+0.5)/2.
  EXPECT_FLOAT_EQ(model->center()[0], 2.0f);
  EXPECT_FLOAT_EQ(model->center()[1], -0.75f);
  // Gaussian 0: mean' = (-1, -1.25), var = (2, 0.5).
  const double expected_k = std::log(0.25) - kLog2Pi - 0.5 * (std::log(2.0) + std::log(0.5)) -
                            0.5 * (1.0 / 2.0 + 1.5625 / 0.5);
  EXPECT_NEAR(model->gconst(0), expected_k, 1e-5);
  EXPECT_FLOAT_EQ(model->means_invvars(0)[0], -0.5f);
  EXPECT_FLOAT_EQ(model->means_invvars(0)[1], -2.5f);
  EXPECT_FLOAT_EQ(model->half_neg_inv_vars(0)[0], -0.25f);
  EXPECT_FLOAT_EQ(model->half_neg_inv_vars(0)[1], -1.0f);
}

TEST(DiagGmmModelTest, NaturalParametersRoundTrip) {
  auto model = TinyModel({0.25, 0.75}, {2.0, 0.5, 1.5, 4.0});
  ASSERT_TRUE(model.ok());
  NaturalGaussian g1 = model->Natural(1);
  EXPECT_NEAR(g1.weight, 0.75, 1e-5);
  EXPECT_NEAR(g1.mean[0], 3.0, 1e-5);
  EXPECT_NEAR(g1.mean[1], 0.5, 1e-5);
  EXPECT_NEAR(g1.variance[0], 1.5, 1e-5);
  EXPECT_NEAR(g1.variance[1], 4.0, 1e-5);
}

TEST(DiagGmmModelTest, RejectsBadNaturalParameters) {
  EXPECT_THAT(TinyModel({0.25, 0.75}, {2.0, 0.0, 1.5, 4.0}).status().message(),
              HasSubstr("state 0, Gaussian 0: variance of dimension 1"));
  EXPECT_THAT(TinyModel({0.25, 0.75}, {2.0, 1.0, -1.5, 4.0}).status().message(),
              HasSubstr("state 0, Gaussian 1: variance of dimension 0"));
  EXPECT_THAT(TinyModel({0.25, 0.70}, {2.0, 1.0, 1.5, 4.0}).status().message(),
              HasSubstr("weights sum to 0.95"));
  EXPECT_THAT(TinyModel({0.25, NAN}, {2.0, 1.0, 1.5, 4.0}).status().message(),
              HasSubstr("Gaussian 1: weight"));
  EXPECT_EQ(TinyModel({0.25, 0.75}, {2.0, INFINITY, 1.5, 4.0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  DiagGmmModelBuilder empty(3);
  EXPECT_FALSE(std::move(empty).Build().ok());
  DiagGmmModelBuilder wrong_size(3);
  EXPECT_THAT(wrong_size.AddState({1.0}, {1.0, 2.0}, {1.0, 1.0, 1.0}).message(),
              HasSubstr("need 3 means"));
}

TEST(DiagGmmModelTest, FromScoringFormAcceptsWhatTheBuilderMade) {
  auto built = GenerateSyntheticModel({.num_states = 7, .min_gaussians = 1, .max_gaussians = 9,
                                       .dim = 13, .seed = 3});
  ASSERT_TRUE(built.ok()) << built.status();
  const ConstMatrixView p = built->params();
  std::vector<float> params(p.data, p.data + p.rows * p.cols);
  auto copy = DiagGmmModel::FromScoringForm(
      13, {built->state_offsets().begin(), built->state_offsets().end()},
      {built->center().begin(), built->center().end()}, params);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->num_gaussians(), built->num_gaussians());
  EXPECT_EQ(copy->max_gaussians_per_state(), built->max_gaussians_per_state());
}

TEST(DiagGmmModelTest, FromScoringFormRejectsBrokenArrays) {
  auto built = GenerateSyntheticModel({.num_states = 3, .min_gaussians = 2, .max_gaussians = 2,
                                       .dim = 4, .seed = 5});
  ASSERT_TRUE(built.ok());
  const ConstMatrixView p = built->params();
  const std::vector<float> params(p.data, p.data + p.rows * p.cols);
  const std::vector<int64_t> offsets(built->state_offsets().begin(), built->state_offsets().end());
  const std::vector<float> center(built->center().begin(), built->center().end());
  auto with = [&](std::vector<int64_t> o, std::vector<float> pr) {
    return DiagGmmModel::FromScoringForm(4, o, center, pr).status();
  };
  EXPECT_TRUE(with(offsets, params).ok());
  std::vector<float> positive_v = params;
  positive_v[1 * 9 + 5] = 0.1f;  // state 0, Gaussian 1, v of dimension 0
  EXPECT_THAT(with(offsets, positive_v).message(), HasSubstr("state 0, Gaussian 1: variance"));
  std::vector<float> nan_u = params;
  nan_u[4 * 9 + 2] = NAN;  // state 2, Gaussian 0
  EXPECT_THAT(with(offsets, nan_u).message(), HasSubstr("state 2, Gaussian 0: parameter is not finite"));
  std::vector<float> heavy = params;
  heavy[2 * 9] += 1.0f;  // state 1's first weight times e
  EXPECT_THAT(with(offsets, heavy).message(), HasSubstr("state 1: mixture weights sum"));
  EXPECT_FALSE(with({0, 2, 2, 6}, params).ok());
  EXPECT_FALSE(with({0, 2, 4, 7}, params).ok());
}

}  // namespace
}  // namespace gmmscore
