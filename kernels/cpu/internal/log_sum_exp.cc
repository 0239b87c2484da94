#include "kernels/cpu/internal/log_sum_exp.h"

#include <algorithm>
#include <cmath>

#include "kernels/core/fast_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GMMSCORE_HAVE_AVX2_CLONE 1
#define GMMSCORE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define GMMSCORE_HAVE_AVX2_CLONE 0
#endif

namespace gmmscore::cpu_internal {
namespace {

// Frames handled together: the running max and sum live in two arrays of
// this size on the stack (L1), and each Gaussian row is read twice.
constexpr int64_t kFrameTile = 64;
// States whose exponentials are summed in float before adding to the float64
// total; a block sum of values <= 1 stays exact to ~1e-7 relative.
constexpr int64_t kStateBlock = 256;
// Independent partial sums and maxima: lets the compiler use whole vectors
// without reassociating float operations itself (which it may not do without
// -ffast-math).
constexpr int kLanes = 8;

// The bodies below are always inlined into one wrapper per SimdLevel, so
// each copy is vectorised for its own instruction set.
#define GMMSCORE_BODY [[gnu::always_inline]] inline

// One tile of up to kFrameTile frames.
GMMSCORE_BODY void StateTile(const float* scores, int64_t stride, int num_gaussians, int64_t width,
                             float* out, int64_t out_stride) {
  float max[kFrameTile];
  float sum[kFrameTile];
  for (int64_t t = 0; t < width; ++t) max[t] = scores[t];
  for (int g = 1; g < num_gaussians; ++g) {
    const float* row = scores + g * stride;
    for (int64_t t = 0; t < width; ++t) max[t] = max[t] < row[t] ? row[t] : max[t];
  }
  for (int64_t t = 0; t < width; ++t) sum[t] = 0.0f;
  for (int g = 0; g < num_gaussians; ++g) {
    const float* row = scores + g * stride;
    for (int64_t t = 0; t < width; ++t) sum[t] += FastExp(row[t] - max[t]);
  }
  // sum is in [1, num_gaussians]: FastLog's domain.
  for (int64_t t = 0; t < width; ++t) sum[t] = max[t] + FastLog(sum[t]);
  for (int64_t t = 0; t < width; ++t) out[t * out_stride] = sum[t];
}

GMMSCORE_BODY void StateBody(const float* scores, int64_t stride, int num_gaussians, int64_t width,
                             float* out, int64_t out_stride) {
  for (int64_t first = 0; first < width; first += kFrameTile) {
    const int64_t tile = std::min(kFrameTile, width - first);
    if (num_gaussians == 1) {
      for (int64_t t = 0; t < tile; ++t) out[(first + t) * out_stride] = scores[first + t];
    } else {
      StateTile(scores + first, stride, num_gaussians, tile, out + first * out_stride, out_stride);
    }
  }
}

GMMSCORE_BODY float FrameBody(const float* values, int64_t count) {
  float lane_max[kLanes];
  for (int l = 0; l < kLanes; ++l) lane_max[l] = values[0];
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      lane_max[l] = lane_max[l] < values[i + l] ? values[i + l] : lane_max[l];
    }
  }
  float max = *std::max_element(lane_max, lane_max + kLanes);
  for (; i < count; ++i) max = std::max(max, values[i]);

  double total = 0.0;
  float exps[kStateBlock];
  for (int64_t first = 0; first < count; first += kStateBlock) {
    const int64_t block = std::min(kStateBlock, count - first);
    for (int64_t j = 0; j < block; ++j) exps[j] = FastExp(values[first + j] - max);
    float lane_sum[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= block; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) lane_sum[l] += exps[j + l];
    }
    for (; j < block; ++j) lane_sum[0] += exps[j];
    for (int l = 0; l < kLanes; ++l) total += lane_sum[l];
  }
  // total >= 1 (the maximum contributes exp(0)).
  return static_cast<float>(max + std::log(total));
}

void StateBaseline(const float* scores, int64_t stride, int num_gaussians, int64_t width,
                   float* out, int64_t out_stride) {
  StateBody(scores, stride, num_gaussians, width, out, out_stride);
}

float FrameBaseline(const float* values, int64_t count) { return FrameBody(values, count); }

#if GMMSCORE_HAVE_AVX2_CLONE
GMMSCORE_TARGET_AVX2 void StateAvx2(const float* scores, int64_t stride, int num_gaussians,
                                    int64_t width, float* out, int64_t out_stride) {
  StateBody(scores, stride, num_gaussians, width, out, out_stride);
}

GMMSCORE_TARGET_AVX2 float FrameAvx2(const float* values, int64_t count) {
  return FrameBody(values, count);
}
#endif

}  // namespace

SimdLevel DetectSimdLevel() {
#if GMMSCORE_HAVE_AVX2_CLONE
  static const bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2_fma) return SimdLevel::kAvx2Fma;
#endif
  return SimdLevel::kBaseline;
}

void StateLogSumExp(SimdLevel level, const float* scores, int64_t stride, int num_gaussians,
                    int64_t width, float* out, int64_t out_stride) {
#if GMMSCORE_HAVE_AVX2_CLONE
  if (level == SimdLevel::kAvx2Fma) {
    return StateAvx2(scores, stride, num_gaussians, width, out, out_stride);
  }
#endif
  StateBaseline(scores, stride, num_gaussians, width, out, out_stride);
}

float FrameLogSumExp(SimdLevel level, const float* values, int64_t count) {
#if GMMSCORE_HAVE_AVX2_CLONE
  if (level == SimdLevel::kAvx2Fma) return FrameAvx2(values, count);
#endif
  return FrameBaseline(values, count);
}

}  // namespace gmmscore::cpu_internal
