// Branch-free float32 exp and log that GCC and Clang auto-vectorise at the
// x86-64 baseline (SSE2), for the log-sum-exp loops of the CPU backend.
//
//   for (int i = 0; i < n; ++i) out[i] = FastExp(x[i] - max);   // vectorised
//
// std::exp / std::log do not vectorise without -ffast-math and a vector math
// library; these are Cephes' expf/logf polynomials (relative error about
// 1e-7, i.e. one or two float ulps) with every branch turned into a bitwise
// select. (Not `c ? a : b`: GCC 12 threads a clamp written that way into a
// branch to a constant-folded exp(-87) and then refuses to vectorise the
// loop for its control flow; fast_math_test and the -fopt-info-vec output
// are the ways to notice.) Inline on purpose: they are only useful inside a
// loop the compiler can see.
#ifndef GMMSCORE_KERNELS_CORE_FAST_MATH_H_
#define GMMSCORE_KERNELS_CORE_FAST_MATH_H_

#include <bit>
#include <cstdint>

namespace gmmscore::cpu_internal {

// Below this, exp(x) would be subnormal; FastExp clamps x here instead, which
// keeps every lane on the fast path and changes a log-sum-exp by < 1e-37.
inline constexpr float kFastExpMinArg = -87.0f;
// Above this exp(x) overflows float.
inline constexpr float kFastExpMaxArg = 88.0f;

// All-ones when `condition`, else zero: a lane mask for SelectBits.
[[gnu::always_inline]] inline int32_t LaneMask(bool condition) {
  return -static_cast<int32_t>(condition);
}

// mask ? a : b, for a mask from LaneMask, without a branch.
[[gnu::always_inline]] inline float SelectBits(int32_t mask, float a, float b) {
  return std::bit_cast<float>((std::bit_cast<int32_t>(a) & mask) |
                              (std::bit_cast<int32_t>(b) & ~mask));
}

// exp(x) for finite x, relative error ~1e-7 on [kFastExpMinArg,
// kFastExpMaxArg]; inputs outside are clamped to that range.
[[gnu::always_inline]] inline float FastExp(float x) {
  x = SelectBits(LaneMask(x < kFastExpMinArg), kFastExpMinArg, x);
  x = SelectBits(LaneMask(x > kFastExpMaxArg), kFastExpMaxArg, x);
  // n = round(x / ln 2): adding 1.5 * 2^23 pushes the fraction bits out.
  constexpr float kRoundMagic = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kRoundMagic) - kRoundMagic;
  // r = x - n ln2 in two steps (Cody-Waite), |r| <= ln2 / 2.
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n from the exponent field; n is in [-126, 127] after the clamp.
  const float two_to_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return p * two_to_n;
}

// log(x) for positive normal finite x, relative error ~1e-7 (absolute ~1e-7
// near x = 1). Zero, negative, subnormal and non-finite inputs give garbage.
[[gnu::always_inline]] inline float FastLog(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  // x = m * 2^e with m in [0.5, 1).
  int32_t e = ((bits >> 23) & 0xff) - 126;
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
  // Move m to [sqrt(1/2), sqrt(2)) so the polynomial argument is small.
  const int32_t small = LaneMask(m < 0.707106781186547524f);
  e += small;  // -1 where small
  const float f = (m - 1.0f) + SelectBits(small, m, 0.0f);
  const float fe = static_cast<float>(e);
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y = y - 2.12194440e-4f * fe;
  y = y - 0.5f * z;
  return (f + y) + 0.693359375f * fe;
}

}  // namespace gmmscore::cpu_internal

#endif  // GMMSCORE_KERNELS_CORE_FAST_MATH_H_
