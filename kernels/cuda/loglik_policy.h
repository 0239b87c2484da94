// Tile sizes of the likelihood kernels, and which algorithm runs when the
// caller asks for Algorithm::kAuto. Kept apart from the kernels so tuning is
// one edit here, with the benchmark behind each number beside it.
#ifndef GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_
#define GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_

#include <cstdint>

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// The fused kernel (Vanek et al. 2011, Algorithm 1): one thread per state,
// a block holds `kStatesPerBlock` states and `kFramesPerBlock` frames.
template <int kFramesPerBlockIn>
struct FusedPolicy {
  // 64 threads: the paper found 64 best on every card it tried (section 4.2);
  // it is also what the layout is built for (FusedLayout::states_per_block).
  static constexpr int kStatesPerBlock = 64;
  static constexpr int kFramesPerBlock = kFramesPerBlockIn;
  static constexpr int kThreads = kStatesPerBlock;
  // Frame tiles run along gridDim.x (up to 2^31 - 1); launches are cut at
  // 2^24 frames anyway to keep int64 offsets in the kernel modest.
  static constexpr int64_t kMaxFramesPerLaunch = 1LL << 24;
};

using Fused8Policy = FusedPolicy<8>;
using Fused16Policy = FusedPolicy<16>;
// Beyond the paper: 32 frames per block halve the model reads again.
using Fused32Policy = FusedPolicy<32>;

inline constexpr int kFusedStatesPerBlock = 64;

// The two-kernel path keeps its T x Gtot Gaussian-score matrix under this
// many bytes by scoring long windows in slices of frames.
inline constexpr int64_t kGemmScratchBytes = 1LL << 30;

// Algorithm for kAuto. See docs/PERFORMANCE.md ("Policy") for the
// measurements behind the choice; until they are in, the 16-frame kernel,
// which reads the model half as often as the 8-frame one, for T >= 16.
inline Algorithm ChooseAlgorithm(int64_t num_frames) {
  return num_frames >= 16 ? Algorithm::kFused16 : Algorithm::kFused8;
}

// Accuracy each algorithm is held to, in MaxNormalizedError (see
// reference_scorer.h). The fused kernels use the squared-distance form and
// meet 1e-4. The two-kernel path keeps the paper's GEMM form [K, u, v] .
// [1, y, y^2], whose float32 sum cancels terms of a few hundred nats, so its
// bound is the measured 1.7e-4 (H200, docs/PERFORMANCE.md) with a margin.
inline double ErrorBound(Algorithm algorithm) {
  return algorithm == Algorithm::kGemm ? 2.5e-4 : 1e-4;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_
