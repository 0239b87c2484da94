#include "proto/half_float.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gmmscore {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Saturates finite values to the half range; infinities (and NaN) pass.
float Saturate(float x) { return std::isfinite(x) ? std::clamp(x, -kLargestHalf, kLargestHalf) : x; }

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void FloatsToHalvesF16c(absl::Span<const float> in,
                                                              float offset, uint16_t* out) {
  const size_t n = in.size();
  const __m256 off = _mm256_set1_ps(offset);
  const __m256 lo = _mm256_set1_ps(-kLargestHalf);
  const __m256 hi = _mm256_set1_ps(kLargestHalf);
  const __m256 inf = _mm256_set1_ps(INFINITY);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(in.data() + i), off);
    // Clamp the finite values only: |d| == inf (and NaN) keep d.
    const __m256 finite = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), d), inf, _CMP_LT_OQ);
    const __m256 clamped = _mm256_min_ps(_mm256_max_ps(d, lo), hi);
    const __m256 v = _mm256_blendv_ps(d, clamped, finite);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = FloatToHalf(Saturate(in[i] - offset));
}

__attribute__((target("avx,f16c"))) void HalvesToFloatsF16c(absl::Span<const uint16_t> in,
                                                              float offset, float* out) {
  const size_t n = in.size();
  const __m256 off = _mm256_set1_ps(offset);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + i));
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_cvtph_ps(h), off));
  }
  for (; i < n; ++i) out[i] = HalfToFloat(in[i]) + offset;
}

bool HasF16c() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}
#endif

}  // namespace

uint16_t FloatToHalf(float value) {
  const uint32_t x = Bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to 65536 or more
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal half counts units
    // of 2^-24; nearbyint rounds to nearest even in the default mode, and a
    // result of 0x400 is exactly the smallest normal's encoding.
    const float units = std::nearbyint(FromBits(abs) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  // Rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10
  // bits, ties to even; a carry out of the mantissa correctly bumps the
  // exponent.
  const uint32_t rebiased = abs - 0x38000000u;
  const uint32_t rounded = rebiased + 0x0fffu + ((rebiased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = (static_cast<uint32_t>(half) & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return FromBits(sign | 0x7f800000u | (mantissa << 13));
  return FromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

namespace half_internal {

void FloatsToHalvesPortable(absl::Span<const float> in, float offset, uint16_t* out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = FloatToHalf(Saturate(in[i] - offset));
}

void HalvesToFloatsPortable(absl::Span<const uint16_t> in, float offset, float* out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = HalfToFloat(in[i]) + offset;
}

}  // namespace half_internal

void FloatsToHalves(absl::Span<const float> in, float offset, uint16_t* out) {
#if defined(__x86_64__)
  if (HasF16c()) return FloatsToHalvesF16c(in, offset, out);
#endif
  half_internal::FloatsToHalvesPortable(in, offset, out);
}

void HalvesToFloats(absl::Span<const uint16_t> in, float offset, float* out) {
#if defined(__x86_64__)
  if (HasF16c()) return HalvesToFloatsF16c(in, offset, out);
#endif
  half_internal::HalvesToFloatsPortable(in, offset, out);
}

}  // namespace gmmscore
