#include "proto/half_float.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

bool IsNanHalf(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

TEST(HalfFloatTest, KnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(HalfToFloat(0xfc00), -kInf);
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);  // below the tie at 65520
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(FloatToHalf(-kInf), 0xfc00);
  EXPECT_TRUE(IsNanHalf(FloatToHalf(std::nanf(""))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Halfway between the two smallest subnormals, and into the normals.
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.5f, -24)), 0x0400);
}

// Every half (NaNs aside) survives a trip through float unchanged.
TEST(HalfFloatTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    if (IsNanHalf(half)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(half))) << h;
      continue;
    }
    EXPECT_EQ(FloatToHalf(HalfToFloat(half)), half) << h;
  }
}

// FloatToHalf picks the nearest half, ties to the even one, judged in
// float64 against both neighbours of its answer.
TEST(HalfFloatTest, RoundsToNearestEven) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> exponent(-27, 16);
  std::uniform_real_distribution<double> unit(1, 2);
  for (int i = 0; i < 200000; ++i) {
    const float x = static_cast<float>((i % 2 ? -1 : 1) * unit(rng) * std::exp2(exponent(rng)));
    if (std::fabs(x) >= 65520.0f) continue;
    const uint16_t h = FloatToHalf(x);
    const double got = HalfToFloat(h);
    const double error = std::fabs(static_cast<double>(x) - got);
    // The neighbours in magnitude (same sign).
    for (int step : {-1, 1}) {
      const int magnitude = (h & 0x7fff) + step;
      if (magnitude < 0 || magnitude > 0x7bff) continue;
      const double other = HalfToFloat(static_cast<uint16_t>((h & 0x8000) | magnitude));
      const double other_error = std::fabs(static_cast<double>(x) - other);
      ASSERT_LE(error, other_error) << x;
      if (error == other_error) ASSERT_EQ(h & 1, 0) << "tie not to even at " << x;
    }
  }
}

// The dispatched loops (F16C where the CPU has it) give the portable loops'
// bits, on every length remainder, with saturation and infinities.
TEST(HalfFloatTest, VectorLoopsMatchPortable) {
  std::mt19937 rng(5);
  std::normal_distribution<float> value(-80.0f, 400.0f);
  for (int n : {0, 1, 7, 8, 9, 31, 5003}) {
    std::vector<float> in(n);
    for (float& v : in) v = value(rng);
    if (n > 3) {
      in[0] = -kInf;
      in[1] = -1e9f;  // saturates to -65504 after the offset
      in[2] = 3e5f;   // to +65504
      in[3] = -0.0f;
    }
    const float offset = n > 0 ? in[n / 2] : 0.0f;
    std::vector<uint16_t> fast(n + 1, 0xabcd), portable(n + 1, 0xabcd);
    FloatsToHalves(in, offset, fast.data());
    half_internal::FloatsToHalvesPortable(in, offset, portable.data());
    ASSERT_EQ(fast, portable) << n;
    EXPECT_EQ(fast[n], 0xabcd) << "wrote past the end";
    if (n > 3) {
      EXPECT_EQ(fast[0], 0xfc00);
      EXPECT_EQ(HalfToFloat(fast[1]), -kLargestHalf);
      EXPECT_EQ(HalfToFloat(fast[2]), kLargestHalf);
    }
    std::vector<float> back(n + 1, 7.0f), back_portable(n + 1, 7.0f);
    HalvesToFloats(absl::MakeConstSpan(fast.data(), n), offset, back.data());
    half_internal::HalvesToFloatsPortable(absl::MakeConstSpan(fast.data(), n), offset,
                                          back_portable.data());
    ASSERT_EQ(0, std::memcmp(back.data(), back_portable.data(), sizeof(float) * (n + 1))) << n;
    EXPECT_EQ(back[n], 7.0f);
    // Within half a unit in the last place of the difference.
    for (int i = 4; i < n; ++i) {
      const double d = static_cast<double>(in[i]) - offset;
      EXPECT_LE(std::fabs(back[i] - in[i]), std::ldexp(std::fabs(d), -11) + 1e-5 * std::fabs(in[i]))
          << i;
    }
  }
}

}  // namespace
}  // namespace gmmscore
