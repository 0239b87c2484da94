#include "kernels/score/reference_scorer.h"

#include <cmath>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

// Independent check from natural parameters: log sum_g w_g N(x; mu_g, var_g).
double NaturalLogLikelihood(const DiagGmmModel& model, int state, const float* x) {
  double sum = 0.0;
  for (int64_t g = model.state_offsets()[state]; g < model.state_offsets()[state + 1]; ++g) {
    const NaturalGaussian n = model.Natural(g);
    double log_density = std::log(n.weight);
    for (int d = 0; d < model.dim(); ++d) {
      const double diff = x[d] - n.mean[d];
      log_density -= 0.5 * (std::log(2 * M_PI * n.variance[d]) + diff * diff / n.variance[d]);
    }
    sum += std::exp(log_density);
  }
  return std::log(sum);
}

TEST(ReferenceScorerTest, AgreesWithTheTextbookDensity) {
  auto model = GenerateSyntheticModel({.num_states = 9, .min_gaussians = 1, .max_gaussians = 5,
                                       .dim = 13, .seed = 21});
  ASSERT_TRUE(model.ok());
  FloatMatrix features = GenerateSyntheticFeatures(*model, 6, 22);
  std::vector<double> ll = ReferenceLogLikelihoods(*model, features.view());
  ASSERT_EQ(ll.size(), 6u * 9u);
  for (int t = 0; t < 6; ++t) {
    for (int s = 0; s < 9; ++s) {
      // The scoring form is float32, so the two agree to float rounding of K, u, v.
      EXPECT_NEAR(ll[t * 9 + s], NaturalLogLikelihood(*model, s, features.row(t)),
                  1e-3 * std::max(1.0, std::abs(ll[t * 9 + s])))
          << "frame " << t << " state " << s;
    }
  }
}

TEST(ReferenceScorerTest, MaxAbsErrorNeverHidesNaN) {
  FloatMatrix m(1, 2);
  m.at(0, 0) = 1.0f;
  m.at(0, 1) = NAN;
  EXPECT_TRUE(std::isinf(MaxAbsError(m, {1.0, 1.0})));
  m.at(0, 1) = 1.5f;
  EXPECT_DOUBLE_EQ(MaxAbsError(m, {1.0, 1.0}), 0.5);
}

TEST(ReferenceScorerTest, NormalizedErrorIsAbsoluteNearZeroAndRelativeFarOut) {
  FloatMatrix m(1, 3);
  m.at(0, 0) = -100.0f;
  m.at(0, 1) = -3000.0f;
  m.at(0, 2) = NAN;
  // -100: absolute 5e-5; -3000: 1e-3 / (3000/256).
  std::vector<double> ref = {-100.00005, -3000.001, -1.0};
  EXPECT_TRUE(std::isinf(MaxNormalizedError(m, ref)));
  m.at(0, 2) = -1.0f;
  EXPECT_NEAR(MaxNormalizedError(m, ref), std::max(5e-5, 1e-3 * 256 / 3000.001), 2e-6);
  ref[0] = -100.001;
  EXPECT_NEAR(MaxNormalizedError(m, ref), 1e-3, 1e-5);
}

}  // namespace
}  // namespace gmmscore
