// Tile sizes of every likelihood kernel family (fused, split, register-
// blocked, mma.sync tensor-core, wgmma), the device limits their launchers
// respect, and which algorithm runs when the caller asks for
// Algorithm::kAuto. Kept apart from the kernels so tuning is one edit here,
// with the benchmark behind each number beside it (or a plain "not swept"
// where none was run).
#ifndef GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_
#define GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/score/scoring_backend.h"

// Functions the host and the kernels both call (shared-memory sizes); plain
// functions where no CUDA compiler reads this header (the planner's tests).
#if defined(__CUDACC__)
#define GMMSCORE_HOST_DEVICE __host__ __device__
#else
#define GMMSCORE_HOST_DEVICE
#endif

namespace gmmscore {

// CUDA's limit on gridDim.y and gridDim.z (every launcher that puts state
// blocks, state ranges or segments on y or z checks against it).
inline constexpr int64_t kMaxGridDimYZ = 65535;

// Frame tiles run along gridDim.x (up to 2^31 - 1); launches are cut at 2^24
// frames anyway to keep the kernels' int64 frame offsets modest.
inline constexpr int64_t kFramesPerLaunchLimit = int64_t{1} << 24;

// Dynamic shared memory one block may opt into: 99 KB on sm_86/sm_89, the
// least of the GPUs the mma.sync kernel runs on (sm_80: 163 KB); 227 KB on
// sm_90, of 228 KB an SM holds, for the wgmma kernel (CUDA C++ Programming
// Guide, "Compute Capabilities", shared memory per block and per SM).
inline constexpr size_t kSharedBytesPerBlockSm86 = 99 * 1024;
inline constexpr size_t kSharedBytesPerSmSm90 = 228 * 1024;

// The fused kernel (Vanek et al. 2011, Algorithm 1): one thread per state,
// a block holds `kStatesPerBlock` states and `kFramesPerBlock` frames.
template <int kFramesPerBlockIn>
struct FusedPolicy {
  // 64 threads: the paper found 64 best on every card it tried (section 4.2);
  // it is also what the layout is built for (FusedLayout::states_per_block).
  static constexpr int kStatesPerBlock = 64;
  static constexpr int kFramesPerBlock = kFramesPerBlockIn;
  static constexpr int kThreads = kStatesPerBlock;
  static constexpr int64_t kMaxFramesPerLaunch = kFramesPerLaunchLimit;
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
  static constexpr int64_t kMaxFramesPerLaunch = kFramesPerLaunchLimit;
};

// The register-blocked fused kernel (blocked_loglik_kernel.cuh): the fused
// layout and grid, one thread per state evaluating kGaussiansPerThread of its
// Gaussians at once, so each broadcast shared load of a frame quad feeds
// 8 * kGaussiansPerThread FFMAs.
// kMinBlocksPerSm caps the registers through __launch_bounds__ (64 threads:
// 65536 / (64 * kMinBlocksPerSm) per thread), chosen so the kernel compiles
// without spills (nvcc -Xptxas -v).
template <Algorithm kAlgorithmIn, int kFramesPerBlockIn, int kGaussiansPerThreadIn, int kMinBlocksPerSmIn>
struct BlockedPolicy {
  static constexpr Algorithm kAlgorithm = kAlgorithmIn;
  static constexpr int kStatesPerBlock = kFusedStatesPerBlock;
  static constexpr int kFramesPerBlock = kFramesPerBlockIn;
  static constexpr int kThreads = kStatesPerBlock;
  static constexpr int kGaussiansPerThread = kGaussiansPerThreadIn;
  static constexpr int kMinBlocksPerSm = kMinBlocksPerSmIn;
  static constexpr int64_t kMaxFramesPerLaunch = kFramesPerLaunchLimit;
};

// fused8x2: 8 frames per block. Registers (sm_90, CUDA 13.0): 96, no spills
// until the rotated b layout, 36 bytes of spills since (9 blocks an SM do
// not remove them; the kernel still gained 9-20%, H200 2026-11-28),
// so 10 blocks (20 warps) per SM against fused16's 8, and twice fused16's
// frame tiles, which spreads a T = 256 window over ~1.9 waves of blocks
// instead of ~1.2.
using Fused8x2Policy = BlockedPolicy<Algorithm::kFused8x2, 8, 2, 10>;

// fused8x4: four Gaussians per frame load, 8 frames per block. 168
// registers, no spills, 6 blocks (12 warps) per SM: 128 registers (7 or 8
// blocks) spill 124 bytes. Chosen from a sweep of frames x Gaussians per
// thread on the H100, 2026-11-27 (docs/PERFORMANCE.md "GPU: four Gaussians
// per frame load, fused8x4"; frames/s on 5000x256x36 at T = 64 / 128 / 160 /
// 256 / 1024):
//   8 x 2 (fused8x2, 96 reg)   122k 151k 149k 166k 185k
//   8 x 4 (this, 168 reg)      127k 166k 169k 172k 185k
//   6 x 4 (128 reg)            118k 149k 156k 170k 180k
//   12 x 4 (168 reg)           135k 134k 147k 168k 192k
//   16 x 2 (146 reg)           103k 141k 172k 180k 190k
//   16 x 3 (161 reg)           106k 140k 173k 182k 193k
//   16 x 4 (218 reg)           110k 114k 141k 153k 186k
//   8 x 4 (179 reg, 4 blocks)   98k 135k 165k 164k 178k
// 8 x 4 is the only one ahead of fused8x2 at every length from 64 frames,
// on 5000x32x39 too (T = 160: 1.13M vs 1.04M), and level at T = 1024; the
// 16-frame tiles win at T >= 160 on the big model but lose 15-20% at the
// daemon's short batches. That sweep predates the rotated b layout
// (fused_layout.h BComponent) and the Gaussian slices, which took fused8x4
// on 5000x256x36 from 170k to 208k at T = 256 and 185k to 218k at T = 1024
// (H200, 2026-11-28; the FMA pipe from 54% to 65% busy). Four other forms
// were re-run then (16 x 2 was not ahead either; frames/s on 5000x256x36 /
// 5000x32x39 at T = 64 and 256):
//   8 x 4 (this)   151k 208k / 984k 1.29M
//   12 x 4 (168)   163k 214k / 917k 1.29M
//   16 x 3 (163)   153k 213k / 742k 1.39M
//   8 x 3 (128)    182k 205k / 922k 1.33M
// none ahead everywhere (12 x 4 loses 27% on 5000x32x39 at T = 32).
// Blocks of two and three frame groups sharing the model reads through L1
// (16 and 24 frames a block, 168 registers) halved the L2 traffic and gained
// nothing (168.6k and 160k against 168.5k at T = 256, the same H200):
// docs/PERFORMANCE.md, "The fp32 kernel past 200k".
using Fused8x4Policy = BlockedPolicy<Algorithm::kFused8x4, 8, 4, 6>;

// Slices of each state block's Gaussians for a register-blocked launch, so
// that the last wave of blocks is not mostly empty. `blocks`: frame tiles x
// state blocks; `slots`: blocks resident at once (SMs x kMinBlocksPerSm);
// `groups`: the most Gaussian groups of a state block; `outputs`: frames x
// states of the launch. The wave efficiency waves / ceil(waves) is computed
// for 1 to kMaxBlockedSlices slices, with two limits:
// - each slice holds at least kMinGroupsPerSlice groups of the largest state
//   block (below that the partials and the merge cost more than a tail: 8
//   groups of 4 are 2304 FFMAs a frame and state against 16 bytes of
//   partials; a smaller block's slices are shorter, down to empty, and cost
//   what its few Gaussians cost);
// - all partials fit in kMaxSlicePartialBytes (the workspace stays bounded
//   whatever the batch).
// The fewest slices within 0.02 of the best efficiency are taken.
// 5000 x 256 x 36 (64 groups of 4) on 132 SMs x 6: T = 256, 2528 blocks,
// 3.19 waves: 1 slice 0.80, 2 0.91, 3 0.96, 4 0.98 -> 4 (41 MB of
// partials); T = 128 -> 3; T = 160 (1.99 waves) and 1024 (12.8) -> 1.
inline constexpr int kMaxBlockedSlices = 4;
inline constexpr int kMinGroupsPerSlice = 8;
inline constexpr int64_t kMaxSlicePartialBytes = int64_t{64} << 20;
inline int ChooseBlockedSlices(int64_t blocks, int64_t slots, int groups, int64_t outputs) {
  if (blocks <= 0 || slots <= 0 || outputs <= 0) return 1;
  const auto efficiency = [&](int slices) {
    const double waves = static_cast<double>(blocks * slices) / static_cast<double>(slots);
    return waves / static_cast<double>((blocks * slices + slots - 1) / slots);
  };
  const int64_t by_bytes = kMaxSlicePartialBytes / (outputs * 2 * static_cast<int64_t>(sizeof(float)));
  const int most = static_cast<int>(
      std::clamp<int64_t>(std::min<int64_t>(groups / kMinGroupsPerSlice, by_bytes), 1, kMaxBlockedSlices));
  double best = 0.0;
  for (int slices = 1; slices <= most; ++slices) best = std::max(best, efficiency(slices));
  for (int slices = 1; slices < most; ++slices) {
    if (efficiency(slices) >= best - 0.02) return slices;
  }
  return most;
}

// The mma.sync 3xTF32 kernel (tc_loglik_kernel.cuh): four warps of 16
// frames each; the model's big and small TF32 parts stream through shared
// memory in chunks of 64 rows. The m16n8k8 shape fixes 16 frames a warp;
// the warp count and chunk rows were not swept (no recorded benchmark chose
// them; the tf32x3 column of docs/PERFORMANCE.md's table is what they give).
template <int kStepsIn>
struct TensorCorePolicy {
  static constexpr int kSteps = kStepsIn;   // k-steps of 8: cols <= 8 * kSteps
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kFrames = 16 * kWarps;
  static constexpr int kChunkRows = 64;     // 8 n-tiles per shared chunk
  static constexpr int kRowPad = 4;         // row stride cols + 4: conflict-free fragment loads
  static constexpr int64_t kMaxFramesPerLaunch = kFramesPerLaunchLimit;

  GMMSCORE_HOST_DEVICE static constexpr size_t SharedBytes(int cols) {
    return sizeof(float) * 2ull * kChunkRows * (cols + kRowPad);
  }
};

// The block shape both wgmma kernels share (wgmma_loglik_kernel.cuh and
// wgmma_half_loglik_kernel.cuh, sm_90a): two warpgroups of 64 frames share
// each 64-row model chunk, two stages (chunk c in use, chunk c + 1 loading).
// Two blocks per SM (2 x 80 KB of shared memory at D = 36/39 for TF32); this
// caps registers at 128 (ptxas, CUDA 13.0: 136 bytes of spills at the TF32
// kernel's kSteps 10, still 1.2x faster than one block of 208 registers
// without them).
struct WgmmaBlockShape {
  static constexpr int kWarpGroups = 2;
  static constexpr int kThreads = 128 * kWarpGroups;
  static constexpr int kFrames = 64 * kWarpGroups;
  static constexpr int kChunkRows = 64;    // the MMA's N
  static constexpr int kChunkGroups = kChunkRows / 8;
  static constexpr int kStages = 2;
  static constexpr int kMinBlocks = 2;
  static constexpr int64_t kMaxFramesPerLaunch = kFramesPerLaunchLimit;
};

// The wgmma kernel (3xTF32); docs/PERFORMANCE.md, "The wgmma kernel (sm_90a)
// and why it stops at ~280k", on how it was built and what bounds it.
template <int kStepsIn>
struct WgmmaPolicy : WgmmaBlockShape {
  static constexpr int kSteps = kStepsIn;  // k-steps of 8: cols <= 8 * kSteps

  // One stage holds a chunk's big and small matrices.
  GMMSCORE_HOST_DEVICE static constexpr size_t StageBytes(int cols) {
    return 2ull * kChunkRows * cols * sizeof(float);
  }
  GMMSCORE_HOST_DEVICE static constexpr size_t SharedBytes(int cols) {
    return kStages * StageBytes(cols);
  }
};

// The 3xFP16 wgmma kernel: k-steps of 16 halves (a 32-byte row per step, as
// TF32's 8), so a chunk's stage is half the bytes.
template <int kStepsIn>
struct WgmmaHalfPolicy : WgmmaBlockShape {
  static constexpr int kSteps = kStepsIn;  // k-steps of 16: cols <= 16 * kSteps

  // A stage's big and small matrices; after all stages, each stage's table
  // of the chunk's K values (float) and row-group states (int).
  static constexpr int kTableBytes = 4 * (kChunkRows + kChunkGroups);
  GMMSCORE_HOST_DEVICE static constexpr size_t StageBytes(int cols) {
    return 2ull * kChunkRows * cols * sizeof(uint16_t);
  }
  GMMSCORE_HOST_DEVICE static constexpr size_t SharedBytes(int cols) {
    return kStages * (StageBytes(cols) + kTableBytes);
  }
};

// Waves of wgmma blocks the span count aims at: WgmmaPolicy::kMinBlocks
// blocks are resident per SM, and a few waves even out spans of unequal
// length without re-running the A prologue (features into fragments) too
// often. Not swept (no recorded benchmark chose 3).
inline constexpr int kWgmmaWavesPerSm = 3;

// The two-kernel path keeps its T x Gtot Gaussian-score matrix under this
// many bytes by scoring long windows in slices of frames.
inline constexpr int64_t kGemmScratchBytes = 1LL << 30;

// Algorithm for kAuto ("exact" precision, fp32 kernels only), from the
// H200 run of 2026-11-28 with the rotated b layout and Gaussian slices
// (docs/PERFORMANCE.md "The fp32 kernel past 200k";
// docs/loglik_h200_fp32_rotated.csv). Frames/s at T = 8 / 16 / 32 / 48 /
// 64 / 256:
//   5000x32x39   split8    183k 366k 502k 546k 657k 836k
//                fused8x2  176k 342k 629k 864k 963k 1.25M
//                fused8x4  139k 279k 559k 815k 989k 1.25M
//   5000x64x39   split8    134k 234k 297k 319k 352k 446k
//                fused8x2  164k 301k 479k 500k 535k 648k
//                fused8x4  125k 245k 450k 454k 525k 682k
//   5000x256x36  split8     57k  85k  96k 102k 106k 130k
//                fused8x2   55k 105k 152k 152k 158k 181k
//                fused8x4   66k 126k 146k 170k 150k 208k
// - T < 32: split8, which spreads each state's Gaussians over the chip. It
//   is best on the 32-Gaussian model; the blocked kernels win by 1.2-1.5x on
//   the wider ones at T = 16 (not acted on: one run, and split8 keeps the
//   smallest runs of several models in one launch, batch_plan.h).
// - 32 <= T < 64: fused8x2, 1.25-1.65x split8 on all three models.
// - T >= 64: fused8x4; within 5% of fused8x2 either way at T = 64 and
//   ahead from T = 128 (to 15% at T = 256 on the big model).
// The blocked kernels refuse states of more than ~300k Gaussians (32-bit
// offsets); LaunchLoglik falls back to fused16 there.
inline constexpr int kBlockedMinFrames = 32;
inline constexpr int kFourGaussianMinFrames = 64;
inline Algorithm ChooseAlgorithm(int64_t num_frames, int64_t num_gaussians) {
  (void)num_gaussians;
  if (num_frames < kBlockedMinFrames) return Algorithm::kSplit8;
  if (num_frames < kFourGaussianMinFrames) return Algorithm::kFused8x2;
  return Algorithm::kFused8x4;
}

// Algorithm for kAuto on a model of Precision::kFast: the 3xFP16 wgmma
// kernel where it beat fused8x4 on the H100 (loglik_bench, 2026-11-28, its
// K values and states staged in shared memory: docs/loglik_h100_wgmma_f16_staged.csv;
// PERFORMANCE.md "3xFP16 on wgmma"), else the exact choice. It scores
// 128-frame tiles, so its time is flat up to 128 frames and steps at 129.
// Frames/s at T = 64 / 256, wgmma_f16 against fused8x4:
//   5000x256x36  256k vs 127k   569k vs 173k
//   5000x64x39   684k vs 433k   1.52M vs 608k
//   5000x32x39   1.05M vs 810k  2.37M vs 1.16M
// so from 64 frames on every model of >= 32 Gaussians a state. Narrower
// states and windows under 64 frames were not measured and stay exact. The
// TF32 wgmma kernel (kWgmma) lost to wgmma_f16 in every row measured (275k
// vs 373k on 5000x256x36 at T = 256 before the staging) and is no longer
// chosen.
// `wgmma_available`: a compute-capability-9.0 device.
inline constexpr int kWgmmaMinFrames = 64;        // >= 32 Gaussians a state
inline Algorithm ChooseFastAlgorithm(int64_t num_frames, int64_t num_gaussians, int num_states,
                                     bool wgmma_available) {
  if (wgmma_available && num_states > 0 && num_gaussians >= 32LL * num_states && num_frames >= kWgmmaMinFrames) {
    return Algorithm::kWgmmaHalf;
  }
  return ChooseAlgorithm(num_frames, num_gaussians);
}

// Accuracy each algorithm is held to, in MaxNormalizedError (see
// reference_scorer.h), on synthetic input where 1 frame in 20 is a 4-sigma
// outlier. Measured worst on the H200 (docs/PERFORMANCE.md, "Accuracy"):
// fused 1.5e-4, gemm 1.7e-4 -- float32 evaluation of terms |a y| ~ 100 on
// outlier frames, not a kernel defect; the bounds add a margin.
// The tensor-core path is "fast" precision: the issue allows 1e-3 nats.
// fused8x2 and fused8x4 are held to the fused bound: the same squared-
// distance sums in float32; their base-2 log-add adds at most a float32
// rounding of K' log2(e) and of the result, and a sliced launch's merge
// (__expf, __logf of up to four partials) a few more roundings.
inline double ErrorBound(Algorithm algorithm) {
  if (algorithm == Algorithm::kTf32x3 || algorithm == Algorithm::kWgmma || algorithm == Algorithm::kWgmmaHalf) {
    return 1e-3;
  }
  return algorithm == Algorithm::kGemm ? 2.5e-4 : 2e-4;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LOGLIK_POLICY_H_
