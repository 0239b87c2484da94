// Float <-> IEEE 754 binary16 for answers sent in half precision
// (OutputOptions.float16): half the bytes of float32 through gRPC, which is
// what bounds a GPU server's dense-answer capacity (docs/PERFORMANCE.md).
//
//   std::vector<uint16_t> halves(n);
//   FloatsToHalves(values, /*offset=*/best, halves.data());  // values - best
//   HalvesToFloats(halves, /*offset=*/best, restored.data());
//
// Rounding is to nearest, ties to even. Finite differences beyond the
// largest finite half (65504) saturate to it instead of becoming infinite;
// infinities stay infinities. Both directions use the CPU's F16C conversions
// where it has them and an exact portable equivalent elsewhere (the two give
// the same bits; half_float_test checks it).
//
// Thread safety: pure functions.
#ifndef GMMSCORE_PROTO_HALF_FLOAT_H_
#define GMMSCORE_PROTO_HALF_FLOAT_H_

#include <cstdint>

#include "absl/types/span.h"

namespace gmmscore {

inline constexpr float kLargestHalf = 65504.0f;

// out[i] = binary16(in[i] - offset), saturated to +-kLargestHalf when finite.
void FloatsToHalves(absl::Span<const float> in, float offset, uint16_t* out);
// out[i] = float(in[i]) + offset.
void HalvesToFloats(absl::Span<const uint16_t> in, float offset, float* out);

// One value, portably (the reference the vector paths are tested against).
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t half);

namespace half_internal {
// The portable loops, for tests on machines with F16C.
void FloatsToHalvesPortable(absl::Span<const float> in, float offset, uint16_t* out);
void HalvesToFloatsPortable(absl::Span<const uint16_t> in, float offset, float* out);
}  // namespace half_internal

}  // namespace gmmscore

#endif  // GMMSCORE_PROTO_HALF_FLOAT_H_
