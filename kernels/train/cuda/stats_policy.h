// Tile shapes of the CUDA statistics kernels (stats_kernels.cuh) and the
// limits their backend plans with, kept in one place as loglik_policy.h does
// for the likelihood kernels: tuning is one edit here. Host and device code
// both read it (no CUDA types).
//
// Work unit: a tile of kPairsPerTile pairs (frame-state pairs of one target)
// against a tile of TileGaussians(dim) Gaussians of that target's state.
//   scoring: 256 threads, each 4 pairs x kScoreGaussians Gaussians in registers;
//   statistics GEMM: each thread 4 Gaussians x ColumnsPerThread(dim) columns
//   of x~ = [y, y^2] (the occupancy column comes from a warp shuffle instead,
//   so D = 40 needs 80 columns, 5 per thread, not 81).
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_STATS_POLICY_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_STATS_POLICY_H_

#include <cstdint>

namespace gmmscore {
namespace train_cuda {

inline constexpr int kStatsThreads = 256;
inline constexpr int kPairsPerTile = 64;
// Row pitch (floats) of the pair-major shared arrays [row][pair]: 64 + 4, so
// the float4 reads of 16 different rows at one pair offset fall in 8
// different bank quads (2 wavefronts for 256 bytes, the minimum) instead of
// one (16 wavefronts) at pitch 64.
inline constexpr int kPairPitch = kPairsPerTile + 4;

// Largest feature dimension the kernels are built for.
inline constexpr int kMaxStatsDim = 128;

// Gaussians per tile, 64 or 32 (ChooseTileGaussians picks one per model).
// 64 keeps the per-thread float64 accumulators (4 x ColumnsPerThread x 2
// registers) under the 128-register cap of two 256-thread CTAs per SM up to
// D = 48; beyond, only 32 (half the GEMM rows per thread group, twice the
// column groups). 32 also suits models of small states (an HMM's 16..32
// Gaussians), where a 64-wide tile would score padding half the time.
inline constexpr int kMaxTile64Dim = 48;

// Relative cost per tile Gaussian of 32-wide tiles against 64-wide ones
// (less register reuse in the scoring loop: 3 loads per 16 FMAs instead of
// per 32). It only decides between the two widths for models whose states
// waste much of a 64-wide tile. Measured on the H100 (train_stats_bench
// kernel rows, D = 39, one state of 2048, 2M frames): log-sum-exp 19.2 ms
// vs 17.0 (1.13x), statistics 55.9 ms vs 39.9 (1.40x), so about 1.3 overall;
// 1.15 is what the GPU tests ran with (an HMM-shaped sweep should set it).
inline constexpr double kTile32RelativeCost = 1.15;

// Column groups of the GEMM: (tile / 4) Gaussian groups x column groups = 256.
constexpr int ColumnGroups(int tile_gaussians) { return kStatsThreads / (tile_gaussians / 4); }

// Columns of x~ each thread accumulates (2D columns over the column groups).
constexpr int ColumnsPerThread(int dim, int tile_gaussians) {
  const int groups = ColumnGroups(tile_gaussians);
  return (2 * dim + groups - 1) / groups;
}

// Floats of one tile of model parameters: [K (tile)] [u: dim x tile] [v: dim x tile].
constexpr int64_t TileFloats(int dim, int tile_gaussians) {
  return static_cast<int64_t>(tile_gaussians) * (1 + 2 * dim);
}

// Doubles of one Gaussian's statistics row in the partials and outputs:
// [occupancy, sum gamma y (dim), sum gamma y^2 (dim)].
constexpr int StatsRowDoubles(int dim) { return 1 + 2 * dim; }

// Padding Gaussians of a state's last tile score -FLT_MAX: they never win
// the maximum against a finite score and add exp(-huge) = 0.
inline constexpr float kPaddingGconst = -3.402823466e38f;

// Statistics work items aimed at per launch: this many per resident CTA, so
// that the last wave's imbalance costs under a quarter of the pass. Measured
// on the H100 (D = 39, 2M frames) for 2 / 4 / 8: M = 2048 statistics kernel
// 40.2 / 39.9 / 39.6 ms; M = 64 reduction 0.08 / 0.20 / 0.40 ms beside a
// 1.37 ms kernel (more items, more partials to add).
inline constexpr int kItemsPerResidentCta = 4;
// A work item covers at least this many pair tiles, so that loading its
// Gaussian tile and writing its float64 partial (tile x (1 + 2D) doubles,
// 40 KB at D = 39) are amortised over 2 x 650K FMAs.
inline constexpr int kMinPairTilesPerItem = 2;

// Where the statistics kernel keeps its sums between 64-pair tiles
// (StatsKernel): 0 = float64 registers, each tile's float32 sums added (two
// CTAs per SM); kStatsFlushTilesAlt = float32 over that many tiles, then
// added into the float64 partial in global memory (three CTAs per SM up to
// 5 columns per thread). The two compiled choices; kStatsFlushTiles is the
// default. Measured on the H100 (train_stats_bench, D = 39, 2M frames,
// 2026-11-24, after the moments moved to raw features, which adds a barrier
// and a reload per tile), registers vs flush-8, whole pass: M = 2048 61.9 vs
// 58.7 ms, M = 512 16.2 vs 15.1, M = 256 8.39 vs 7.82, M = 64 1.88 vs 1.86,
// HMM-style alignment (2000 states of 16..32) 17.3 vs 13.5 ms. Before that
// change the two were within a few percent either way. Both have their own
// GPU tests against the float64 reference.
inline constexpr int kStatsFlushTilesAlt = 8;
inline constexpr int kStatsFlushTiles = kStatsFlushTilesAlt;
// The variant that is not the default (tested and benchmarked beside it).
inline constexpr int kStatsOtherFlushTiles = kStatsFlushTiles == 0 ? kStatsFlushTilesAlt : 0;

// Reduction: each thread sums this many partial slots per pass with
// independent accumulators (loads in flight), combined in a fixed order.
inline constexpr int kReduceLanes = 4;

// The tensor-core (3xTF32) kernels (stats_tc_kernels.cuh): tiles of
// kTcTile Gaussians only, the scoring row [K, u, v] and the statistics row
// [1, x, x^2] padded to TcCols(dim) (a multiple of the MMA's k = 8) and at
// most 11 k-steps (D <= 43) so that the per-warp column tiles fit the
// register budget of two CTAs per SM. Needs sm_80 (TF32 MMAs).
inline constexpr int kTcTile = 64;
inline constexpr int kTcMaxDim = 43;
constexpr int TcCols(int dim) { return (2 * dim + 1 + 7) / 8 * 8; }
// K of padding Gaussians in the tensor-core tiles: -2^127, exact in TF32
// (kPaddingGconst = -FLT_MAX rounds to -inf there, and its rest to NaN) and
// below any score but the float32 kernels' own floor.
inline constexpr float kTcPaddingGconst = -1.7014118346046923e38f;

// Which kernels a statistics pass runs (CudaStatsOptions::kernel).
enum class StatsKernelChoice {
  kAuto,     // ChooseStatsKernel
  kFp32,     // stats_kernels.cuh: FFMAs, exact float32 products
  kTf32x3,   // stats_tc_kernels.cuh: 3xTF32 tensor-core products (mma.sync, sm_80+)
};

// kAuto's choice. Measured on an H200 (132 SMs, 2026-11-26, train_stats_bench,
// D = 39, 2M resident frames, frames/s of the whole pass):
//   M        64     128    256    512    1024   2048   4096   alignment(2000 x 16..32)
//   fp32     1117M  464M   259M   134M   67.8M  34.1M  16.8M  156M
//   tf32x3   939M   378M   203M   105M   53.8M  27.3M  13.8M  128M
// and Machlica's E-step (3.1M x 40 x 2048) 91.5 vs 121.8 ms; since the
// float32 kernels keep their scores (same H200 kind, later call): fp32
// M = 256 320M, M = 2048 42.2M, E-step 73.3 ms, tf32x3 unchanged. mma.sync runs
// the 3xTF32 products at 102 TFLOP/s (log-sum-exp kernel) and 73 TFLOP/s
// (statistics kernel), about 2.6x the float32 kernels' FFMA rate for 3x
// their work: the float32 kernels win everywhere on sm_90, so kAuto never
// picks tensor cores. (Hopper's full tensor rate needs wgmma; on sm_80-89,
// where mma.sync is the full-rate path, tf32x3 may win: unmeasured, no such
// device is lent, so it is opt-in there too: --backend cuda/tf32x3.)
constexpr StatsKernelChoice ChooseStatsKernel(int /*compute_major*/, int /*dim*/, int /*tile_gaussians*/) {
  return StatsKernelChoice::kFp32;
}

// The statistics GEMM of kept-score items (CudaStatsOptions::kept_gemm):
// float32 FFMAs (KeptStatsKernel, stats_kernels.cuh) or Hopper's float64
// tensor cores (KeptStatsDmmaKernel, stats_dmma_kernel.cuh: mma.sync
// m16n8k4 .f64, float64 products and sums). Measured on an H100
// (2026-11-27, tmp microbenchmark of independent MMAs, 132 SMs at 1.98 GHz):
// m16n8k4 and m16n8k16 .f64 at 66.5 TFLOP/s, FFMAs at 65.1, m8n8k4 .f64 at
// 33.3: on sm_90 the float64 MMA runs at the float32 FFMA rate, with one
// instruction per 512 FMAs and its operands from registers. Elsewhere the
// float64 rate is a fraction of the float32 one (sm_80 19.5 of 19.5 TFLOP/s
// but only m8n8k4; sm_86/89 1/64; sm_100 half): float32 there.
enum class KeptStatsGemm {
  kAuto,     // ChooseKeptStatsGemm
  kFfma,     // KeptStatsKernel
  kFp64Mma,  // KeptStatsDmmaKernel: tiles of 64, D <= kFp64MmaMaxDim, sm_90
};
// x tiles of 8 columns (and their squares) per lane: 2 ceil(D / 8) x 4
// float64 accumulators, 80 registers at D = 40; the kernel fits the 128
// registers of two 256-thread CTAs per SM without spills up to there
// (D = 48 spills, CUDA 13.0, sm_90).
inline constexpr int kFp64MmaMaxDim = 40;
// With kFp64Mma, the log-sum-exp pass runs on the float64 tensor cores too
// (LseDmmaKernel) for the pairs of states of at least this many tiles, and
// on float32 FFMAs (LseKernel) for the others (two launches per chunk): the float64 kernel stages
// its 64 pairs' [1, y, y^2] once per item, which only pays over many tiles.
// Measured on an H100 in one call (train_stats_bench kernel rows, D = 39,
// 2M frames, 2026-11-27): float64 / float32 log-sum-exp kernel 2.60 /
// 2.41 ms at M = 256 (4 tiles), 15.9 / 17.2 ms at M = 2048 (32 tiles); whole
// passes over calls that day, float64 / float32 log-sum-exp with the float64
// statistics kernel: M = 128 617M / 672M frames/s, 512 213M / 213-219M,
// 1024 112M / 109-110M, 4096 27.3M / 26.2-26.6M.
// CudaStatsOptions::lse_min_tiles overrides it (tests).
inline constexpr int kFp64MmaLseMinTiles = 16;
// k4 steps the float64 kernel's inner loop unrolls (its registers are at
// the 128 cap: 2 steps spill 16 bytes at D = 40, 1 none); the other one is
// built for the benchmark beside it.
inline constexpr int kFp64MmaStepUnroll = 2;
inline constexpr int kFp64MmaStepUnrollAlt = 1;
// A warp of the float64 statistics kernel multiplies only the live pairs
// of its half of a pair tile (a nonzero posterior for one of its 16
// Gaussians), packed into k4 steps (MultiplyLivePairs), when at most this
// many of its 32 pairs were live in its previous tile, and all 32 in order
// otherwise (MultiplyAllPairs). Packing saves (32 - live) / 4 steps of MMAs
// but needs a pass over the posteriors first, and the barrier at each tile
// lines the warps' passes up, so the MMA pipe waits; all-pairs computes the
// posteriors as its MMAs need them. Measured on an H100 in one call
// (2026-11-27, train_stats_bench, D = 39, 2M frames, M = 2048, whose data
// have 1 live pair in 8; and EM iterations 2-4 of Machlica's configuration,
// whose updated models have broad Gaussians, live for many frames), with
// the threshold at -1 (never pack: the kernel as it was), 8, 16, 24, 32:
//   threshold                   -1     8      16     24     32
//   global M = 2048, frames/s   56.2M  68.9M  72.8M  72.0M  72.5M
//   EM iterations 2-4, ms: -1 58.3-59.3, 8 52.1-59.0, 16 50.5-62.7,
//                          24 51.2-58.8, 32 51.4-60.6
// (a repeat of -1 gave 60.4-64.0 and of 16 51.2-58.0: EM iterations vary
// by a few ms from call to call).
inline constexpr int kFp64MmaPackedLivePairs = 24;
constexpr bool Fp64MmaShapeSupported(int dim, int tile) {
  return tile == 64 && dim >= 1 && dim <= kFp64MmaMaxDim;
}
constexpr KeptStatsGemm ChooseKeptStatsGemm(int compute_major, int dim, int tile) {
  return compute_major == 9 && Fp64MmaShapeSupported(dim, tile) ? KeptStatsGemm::kFp64Mma : KeptStatsGemm::kFfma;
}

// Defaults of the backend's scratch bounds (CudaStatsOptions).
inline constexpr int64_t kDefaultMaxChunkPairs = int64_t{1} << 22;      // 64 MB of pair arrays
inline constexpr int64_t kDefaultMaxPartialBytes = int64_t{64} << 20;  // float64 partials

// Kept scores (float32 kernels, states of several tiles): the log-sum-exp
// kernel writes every score it computes to a pairs x Gaussians scratch,
// and the statistics kernel (KeptStatsKernel) reads them back instead of
// scoring again: a third of the pass's FMAs (2D of 6D per pair and
// Gaussian) for 8 bytes of traffic per pair and Gaussian. The chunk of pairs
// shrinks so that its scores fit the budget; below kMinKeptChunkPairs pairs
// per chunk the launches would be too small to fill the GPU, and the
// statistics kernel scores again instead.
// Budget by default: 1/kAutoScoreShare of the device's memory, at most
// kMaxAutoScoreBytes. Measured on an H200 in one call (train_stats_bench,
// D = 39, M = 2048, 2M resident frames, 2026-11-26, before the LSE
// kernel's stores were coalesced): scoring again 58.8 ms; kept with 1 GiB
// (chunks of 131072 pairs, 16 of them) 53.3 ms, with 4 GiB (524288 pairs)
// 49.3 ms; Machlica's E-step 91.5 / 83.5 / 76.7 ms. Each chunk costs its
// launches' last partial wave and a host synchronisation.
inline constexpr int64_t kMaxAutoScoreBytes = int64_t{4} << 30;
inline constexpr int kAutoScoreShare = 16;
inline constexpr int64_t kMinKeptChunkPairs = int64_t{1} << 15;

// Grouping pairs by target (GroupStatsPairs): up to this many slices, each
// on its own thread, of at least kGroupSlicePairs pairs. A fixed function
// of the request's size (not of the machine), so sums come out alike.
inline constexpr int kGroupSlices = 16;
inline constexpr int64_t kGroupSlicePairs = 65536;

// Blocks of the total-log-likelihood reduction: a fixed count, so that the
// float64 sum is added in the same order on every run.
inline constexpr int kLseSumBlocks = 128;

}  // namespace train_cuda
}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_STATS_POLICY_H_
