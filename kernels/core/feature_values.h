// The one definition of a feature value every scorer accepts, shared by the
// daemon's chunks and Score requests, offline scoring and the backends.
//
//   if (!IsUsableFeatureValue(x)) return absl::InvalidArgumentError(...kFeatureValueRule...);
//
// Why more than "finite": every likelihood kernel forms x^2 (times a
// precision) in float32. A finite 3e38 squares to +inf, and inf - inf in the
// expanded (x - mu)^2 / var made NaN scores answered with status OK, while
// the fMLLR path (whose transform overflowed first) refused the same input
// (issue 16). So a value is usable when it and its square fit float32.
#ifndef GMMSCORE_KERNELS_CORE_FEATURE_VALUES_H_
#define GMMSCORE_KERNELS_CORE_FEATURE_VALUES_H_

#include <cmath>

namespace gmmscore {

// The largest float whose square is finite in float32: just below
// 2^64 = sqrt(2^128) (FLT_MAX is 2^128 - 2^104).
inline constexpr float kMaxFeatureMagnitude = 0x1.fffffep+63f;

// For messages: what a usable value is.
inline constexpr char kFeatureValueRule[] =
    "feature values must be finite with magnitude at most 1.8e19 (their squares must fit float32)";

// False for NaN, +-inf and finite values whose square overflows float32.
inline bool IsUsableFeatureValue(float value) {
  return std::fabs(value) <= kMaxFeatureMagnitude;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_FEATURE_VALUES_H_
