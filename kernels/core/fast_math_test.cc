#include "kernels/core/fast_math.h"

#include <cmath>

#include "gtest/gtest.h"

namespace gmmscore::cpu_internal {
namespace {

TEST(FastMathTest, ExpIsWithinAFewUlpsOverItsRange) {
  double worst = 0.0;
  for (float x = kFastExpMinArg; x <= kFastExpMaxArg; x += 0.000731f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(FastExp(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2.5e-7);
  std::printf("FastExp max relative error %.3g\n", worst);
}

TEST(FastMathTest, ExpClampsOutOfRangeArguments) {
  EXPECT_EQ(FastExp(-1000.0f), FastExp(kFastExpMinArg));
  EXPECT_GT(FastExp(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(FastExp(1000.0f)));
  EXPECT_EQ(FastExp(0.0f), 1.0f);
}

TEST(FastMathTest, LogIsWithinAFewUlps) {
  double worst = 0.0;
  // The log-sum-exp feeds it sums in [1, Gaussians per state]; check wider.
  for (float x = 1e-30f; x < 1e30f; x *= 1.0007f) {
    const double exact = std::log(static_cast<double>(x));
    worst = std::max(worst, std::abs(FastLog(x) - exact) / std::max(1.0, std::abs(exact)));
  }
  EXPECT_LT(worst, 2.5e-7);
  std::printf("FastLog max error (relative, absolute below e) %.3g\n", worst);
  EXPECT_EQ(FastLog(1.0f), 0.0f);
}

}  // namespace
}  // namespace gmmscore::cpu_internal
