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

// The split kernel (split_loglik_kernel.cuh): the fused layout, 8 frames per
// block, each state's Gaussians shared by kSplits thread groups and by up to
// kMaxSlices blocks along gridDim.z, sized to give the GPU about
// kBlocksPerSm blocks per SM.
struct SplitPolicy {
  static constexpr int kStatesPerBlock = kFusedStatesPerBlock;
  static constexpr int kFramesPerBlock = 8;
  static constexpr int kSplits = 4;
  static constexpr int kThreads = kStatesPerBlock * kSplits;
  static constexpr int kMaxSlices = 64;
  static constexpr int kBlocksPerSm = 4;
  static constexpr int64_t kMaxFramesPerLaunch = 1LL << 24;
};

// The two-kernel path keeps its T x Gtot Gaussian-score matrix under this
// many bytes by scoring long windows in slices of frames.
inline constexpr int64_t kGemmScratchBytes = 1LL << 30;

// Algorithm for kAuto, from the H200 run of 2026-11-22 (docs/PERFORMANCE.md,
// "Policy"; frames/s of fused8 / gemm):
// - T < 64: every fused variant has only (S / 64) x (T / F) blocks, far too
//   few to fill 132 SMs (T = 8 on 5000 states: 79 blocks), so cuBLAS wins:
//   5000x16x36 T=8 111k / 179k, 5000x256x36 T=16 16k / 53k.
// - T = 64: fused8 wins on small models (5000x16x36 890k / 528k), gemm on
//   large ones (5000x256x36 63k / 111k; 5000x32x39 430k / 440k, a tie).
// - T >= 256: fused wins everywhere (5000x256x36 T=256 124k / 110k,
//   5000x16x36 1.83M / 0.62M); from T = 1024 the 16-frame tile reads the model
//   half as often and edges ahead (5000x256x36 T=4096 164k vs fused8 157k).
inline Algorithm ChooseAlgorithm(int64_t num_frames, int64_t num_gaussians) {
  if (num_frames < 64) return Algorithm::kGemm;
  if (num_frames < 256) return num_gaussians > 150000 ? Algorithm::kGemm : Algorithm::kFused8;
  return num_frames < 1024 ? Algorithm::kFused8 : Algorithm::kFused16;
}

// Accuracy each algorithm is held to, in MaxNormalizedError (see
// reference_scorer.h), on synthetic input where 1 frame in 20 is a 4-sigma
// outlier. Measured worst on the H200 (docs/PERFORMANCE.md, "Accuracy"):
// fused 1.2e-4, gemm 1.6e-4 -- float32 evaluation of terms |a y| ~ 100 on
// outlier frames, not a kernel defect; the bounds add a margin.
inline double ErrorBound(Algorithm algorithm) {
  return algorithm == Algorithm::kGemm ? 2.5e-4 : 2e-4;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_
