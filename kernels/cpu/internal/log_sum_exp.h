// The log-sum-exp halves of the CPU backend: per state over its Gaussians
// (after the GEMM), and per frame over all states (the frame totals).
//
//   const SimdLevel simd = DetectSimdLevel();
//   StateLogSumExp(simd, scores, stride, num_gaussians, width, out, out_stride);
//   float total = FrameLogSumExp(simd, loglikes.row(t), num_states);
//
// Both subtract the maximum before exponentiating and use FastExp/FastLog,
// written so that the loops vectorise over frames (StateLogSumExp) or states
// (FrameLogSumExp). Each is compiled twice: for the x86-64 baseline (SSE2),
// which the whole build targets, and for AVX2 + FMA, chosen at run time where
// the CPU has it; the two agree to within FastExp's accuracy, not bitwise.
// Thread-safe (no shared state).
#ifndef GMMSCORE_KERNELS_CPU_INTERNAL_LOG_SUM_EXP_H_
#define GMMSCORE_KERNELS_CPU_INTERNAL_LOG_SUM_EXP_H_

#include <cstdint>

namespace gmmscore::cpu_internal {

enum class SimdLevel {
  kBaseline,  // what the compiler targets (SSE2 on x86-64)
  kAvx2Fma,   // x86-64 with AVX2 and FMA
};

// The widest level this CPU runs. Cheap after the first call.
SimdLevel DetectSimdLevel();

// `scores` holds one row per Gaussian of a state, `width` frames each, rows
// `stride` floats apart. For every frame t < width writes
//   out[t * out_stride] = log sum_g exp(scores[g * stride + t]).
// Expects num_gaussians >= 1, width >= 0 and finite scores. `level` must not
// exceed DetectSimdLevel().
void StateLogSumExp(SimdLevel level, const float* scores, int64_t stride, int num_gaussians,
                    int64_t width, float* out, int64_t out_stride);

// log sum_i exp(values[i]) over count >= 1 finite values, accumulated in
// float within blocks and float64 across them.
float FrameLogSumExp(SimdLevel level, const float* values, int64_t count);

}  // namespace gmmscore::cpu_internal

#endif  // GMMSCORE_KERNELS_CPU_INTERNAL_LOG_SUM_EXP_H_
