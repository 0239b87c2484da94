#include "kernels/cpu/internal/log_sum_exp.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore::cpu_internal {
namespace {

// Every level this machine can run.
std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> levels = {SimdLevel::kBaseline};
  if (DetectSimdLevel() == SimdLevel::kAvx2Fma) levels.push_back(SimdLevel::kAvx2Fma);
  return levels;
}

double ExactLogSumExp(const std::vector<double>& values) {
  double max = values[0];
  for (double v : values) max = std::max(max, v);
  double sum = 0.0;
  for (double v : values) sum += std::exp(v - max);
  return max + std::log(sum);
}

TEST(LogSumExpTest, StateLogSumExpMatchesFloat64) {
  for (SimdLevel level : Levels()) {
    std::mt19937 random(3);
    std::uniform_real_distribution<float> spread(-60.0f, 0.0f);
    // Offset -1000 checks the max subtraction.
    for (float offset : {0.0f, -1000.0f}) {
      for (int gaussians : {1, 2, 3, 16, 17, 256}) {
        for (int64_t width : {1, 7, 8, 63, 64, 65, 130}) {
          const int64_t stride = width + 5;
          std::vector<float> scores(gaussians * stride);
          for (float& s : scores) s = offset + spread(random);
          const int64_t out_stride = 3;
          std::vector<float> out(width * out_stride, NAN);
          StateLogSumExp(level, scores.data(), stride, gaussians, width, out.data(), out_stride);
          for (int64_t t = 0; t < width; ++t) {
            std::vector<double> column;
            for (int g = 0; g < gaussians; ++g) column.push_back(scores[g * stride + t]);
            const double exact = ExactLogSumExp(column);
            // Two float ulps of the result, plus FastExp/FastLog's error.
            EXPECT_NEAR(out[t * out_stride], exact, 2e-6 + 0x1p-23 * std::abs(exact))
                << gaussians << " Gaussians, width " << width << ", frame " << t << ", level "
                << static_cast<int>(level);
          }
        }
      }
    }
  }
}

TEST(LogSumExpTest, DetectsAvx2WhereTheCpuHasIt) {
#if defined(__x86_64__)
  EXPECT_EQ(DetectSimdLevel() == SimdLevel::kAvx2Fma,
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#endif
}

TEST(LogSumExpTest, FarBelowTheMaximumAddsNothing) {
  const std::vector<float> scores = {-5.0f, -5000.0f, -1e30f};
  for (SimdLevel level : Levels()) {
    float out = NAN;
    StateLogSumExp(level, scores.data(), 1, 3, 1, &out, 1);
    EXPECT_EQ(out, -5.0f);
    EXPECT_EQ(FrameLogSumExp(level, scores.data(), 3), -5.0f);
  }
}

TEST(LogSumExpTest, FrameLogSumExpMatchesFloat64) {
  for (SimdLevel level : Levels()) {
    std::mt19937 random(5);
    std::uniform_real_distribution<float> spread(-300.0f, -100.0f);
    for (int64_t count : {1, 7, 8, 9, 255, 256, 257, 5000}) {
      std::vector<float> values(count);
      for (float& v : values) v = spread(random);
      // Many near-equal terms: the sum of exponentials is large.
      for (int64_t i = 0; i < count; i += 3) values[i] = -100.0f;
      const std::vector<double> exact(values.begin(), values.end());
      EXPECT_NEAR(FrameLogSumExp(level, values.data(), count), ExactLogSumExp(exact), 2e-5)
          << count << " states, level " << static_cast<int>(level);
    }
  }
}

}  // namespace
}  // namespace gmmscore::cpu_internal
