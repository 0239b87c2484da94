// The CUDA statistics backend against the float64 reference. Skips where no
// CUDA device answers (CI); runs for real on the GPU machine. Every backend
// here poisons its device scratch with NaN first, so an element a kernel
// fails to write shows as NaN in the statistics.
//
// Each comparison prints one "stats_error" line (normwise and worst
// element-wise relative errors per array) for the GPU report.
#include "kernels/train/cuda/cuda_stats_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cuda/stats_kernels.h"
#include "kernels/train/cuda/stats_plan.h"
#include "kernels/train/cuda/stats_policy.h"
#include "kernels/train/cuda/stats_test_data.h"
#include "kernels/train/sharded_stats_backend.h"
#include "kernels/train/stats_reference.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<StatsBackend> NewCuda(CudaStatsOptions options = {}) {
  options.poison_scratch = true;
  auto backend = CreateCudaStatsBackend(0, options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(*backend) : nullptr;
}

DiagGmmModel Model(int states, int min_gaussians, int max_gaussians, int dim, uint64_t seed) {
  auto model = GenerateSyntheticModel(
      {.num_states = states, .min_gaussians = min_gaussians, .max_gaussians = max_gaussians, .dim = dim, .seed = seed});
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

// Errors of one array: normwise max|got - want| / max|want|, and the worst
// |got - want| / |want| over elements at least 1e-3 of the largest (smaller
// ones are sums of a few float32 exponentials of far-off Gaussians).
struct ArrayError {
  double normwise = 0.0;
  double elementwise = 0.0;
  bool finite = true;
};

ArrayError Compare(const std::vector<double>& got, const std::vector<double>& want) {
  ArrayError error;
  double scale = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) error.finite = false;
    const double diff = std::fabs(got[i] - want[i]);
    worst = std::max(worst, diff);
    if (std::fabs(want[i]) >= 1e-3 * scale && want[i] != 0.0) {
      error.elementwise = std::max(error.elementwise, diff / std::fabs(want[i]));
    }
  }
  error.normwise = scale > 0.0 ? worst / scale : worst;
  if (!error.finite) error.normwise = error.elementwise = std::numeric_limits<double>::infinity();
  return error;
}

struct Tolerance {
  double normwise = 2e-5;
  double elementwise = 2e-3;
  double loglike = 1e-5;  // relative to |total_loglike|
};

void ExpectClose(const std::string& name, const GmmStats& got, const GmmStats& want, Tolerance tol = {}) {
  ASSERT_EQ(got.occupancy.size(), want.occupancy.size());
  const ArrayError occ = Compare(got.occupancy, want.occupancy);
  const ArrayError mean = Compare(got.mean_acc, want.mean_acc);
  const ArrayError var = Compare(got.var_acc, want.var_acc);
  const double loglike = std::fabs(got.total_loglike - want.total_loglike) /
                         std::max(1.0, std::fabs(want.total_loglike));
  std::printf(
      "stats_error %-36s occ_norm %.3g occ_elem %.3g mean_norm %.3g mean_elem %.3g var_norm %.3g "
      "var_elem %.3g loglike_rel %.3g\n",
      name.c_str(), occ.normwise, occ.elementwise, mean.normwise, mean.elementwise, var.normwise,
      var.elementwise, loglike);
  EXPECT_LE(occ.normwise, tol.normwise) << name;
  EXPECT_LE(mean.normwise, tol.normwise) << name;
  EXPECT_LE(var.normwise, tol.normwise) << name;
  EXPECT_LE(occ.elementwise, tol.elementwise) << name;
  EXPECT_LE(mean.elementwise, tol.elementwise) << name;
  EXPECT_LE(var.elementwise, tol.elementwise) << name;
  EXPECT_LE(loglike, tol.loglike) << name;
  EXPECT_DOUBLE_EQ(got.total_weight, want.total_weight) << name;
}

// The kernels a check runs: the one `options` names, or with kAuto both the
// float32 kernels and, where the shape allows them, the tensor-core ones;
// the float32 kernels with each kept-score GEMM that serves the model here
// (the float64 tensor-core one on sm_90), unless `options` names one.
struct Variant {
  train_cuda::StatsKernelChoice kernel;
  train_cuda::KeptStatsGemm kept_gemm;
};

bool Fp64MmaServes(const DiagGmmModel& model) {
  const absl::StatusOr<DeviceInfo> info = CurrentDeviceInfo();
  return info.ok() && info->major == 9 &&
         train_cuda::Fp64MmaShapeSupported(model.dim(), train_cuda::ChooseTileGaussians(model));
}

std::vector<Variant> VariantsToRun(const CudaStatsOptions& options, const DiagGmmModel& model) {
  using train_cuda::KeptStatsGemm;
  using train_cuda::StatsKernelChoice;
  std::vector<Variant> variants;
  if (options.kernel != StatsKernelChoice::kTf32x3) {
    if (options.kept_gemm != KeptStatsGemm::kAuto) {
      variants.push_back({StatsKernelChoice::kFp32, options.kept_gemm});
    } else {
      variants.push_back({StatsKernelChoice::kFp32, KeptStatsGemm::kFfma});
      if (Fp64MmaServes(model)) variants.push_back({StatsKernelChoice::kFp32, KeptStatsGemm::kFp64Mma});
    }
  }
  if (options.kernel == StatsKernelChoice::kTf32x3 ||
      (options.kernel == StatsKernelChoice::kAuto && train_cuda::TcStatsShapeSupported(model.dim(), train_cuda::kTcTile))) {
    variants.push_back({StatsKernelChoice::kTf32x3, KeptStatsGemm::kAuto});
  }
  return variants;
}

std::string KernelSuffix(train_cuda::StatsKernelChoice kernel) {
  return kernel == train_cuda::StatsKernelChoice::kTf32x3 ? "_tf32x3" : "_fp32";
}
std::string VariantSuffix(const Variant& variant) {
  return variant.kept_gemm == train_cuda::KeptStatsGemm::kFp64Mma ? "_fp64mma" : KernelSuffix(variant.kernel);
}

// Runs the CUDA backend (each of VariantsToRun) and the reference on the same request.
void CheckAgainstReference(const std::string& name, const DiagGmmModel& model, const FloatMatrix& frames,
                           const std::vector<StatsPair>& pairs, int num_sets, CudaStatsOptions options = {},
                           Tolerance tol = {}) {
  auto want = ParallelReferenceStats(model, frames, pairs, num_sets);
  ASSERT_TRUE(want.ok()) << want.status();
  for (const Variant& variant : VariantsToRun(options, model)) {
    CudaStatsOptions run = options;
    run.kernel = variant.kernel;
    run.kept_gemm = variant.kept_gemm;
    auto cuda = NewCuda(run);
    ASSERT_NE(cuda, nullptr);
    const absl::Status set = cuda->SetModel(model);
    ASSERT_TRUE(set.ok()) << set;
    auto block = cuda->LoadFrames(frames.view());
    ASSERT_TRUE(block.ok()) << block.status();
    GmmStats got = GmmStats::ForModel(model, num_sets);
    const absl::Status status = cuda->Accumulate(**block, pairs, &got);
    ASSERT_TRUE(status.ok()) << status;
    if (variant.kept_gemm == train_cuda::KeptStatsGemm::kFp64Mma && model.max_gaussians_per_state() > 64 &&
        options.max_score_bytes < 0) {  // (a budget set by the test may keep none: the float32 rescoring then)
      EXPECT_GT(KeptScoreChunks(*cuda), 0) << name << ": the float64 kernels read kept scores";
    }
    ExpectClose(name + VariantSuffix(variant), got, *want, tol);
  }
}

// --- A global GMM (no pairs) over every D x M x T of the brief. -----------

struct GlobalCase {
  int dim, gaussians;
  int64_t frames;
};

class GlobalGmmTest : public ::testing::TestWithParam<GlobalCase> {};

TEST_P(GlobalGmmTest, MatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  const GlobalCase c = GetParam();
  const DiagGmmModel model = Model(1, c.gaussians, c.gaussians, c.dim, 11 + c.gaussians);
  const FloatMatrix frames = DrawModelFrames(model, c.frames, 5 + c.frames);
  CheckAgainstReference("global_D" + std::to_string(c.dim) + "_M" + std::to_string(c.gaussians) + "_T" +
                            std::to_string(c.frames),
                        model, frames, {}, 1);
}

std::vector<GlobalCase> GlobalCases() {
  std::vector<GlobalCase> cases;
  for (int dim : {13, 39, 40}) {
    for (int gaussians : {1, 3, 64, 2048}) {
      for (int64_t frames : {1, 63, 65, 100000}) cases.push_back({dim, gaussians, frames});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GlobalGmmTest, ::testing::ValuesIn(GlobalCases()),
                         [](const ::testing::TestParamInfo<GlobalCase>& info) {
                           return "D" + std::to_string(info.param.dim) + "_M" + std::to_string(info.param.gaussians) +
                                  "_T" + std::to_string(info.param.frames);
                         });

// --- Every kernel instance: dimensions 1..128, single- and multi-tile. ----

class DimensionTest : public ::testing::TestWithParam<int> {};

TEST_P(DimensionTest, MatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  const int dim = GetParam();
  // 1 Gaussian (one tile: the fused log-sum-exp), 70 (several tiles of 32)
  // and 128 (tiles of 64 up to D = 48; ChooseTileGaussians).
  for (int gaussians : {1, 70, 128}) {
    const DiagGmmModel model = Model(1, gaussians, gaussians, dim, 100 + dim);
    const FloatMatrix frames = DrawModelFrames(model, 300, 7);
    CheckAgainstReference("dim_D" + std::to_string(dim) + "_M" + std::to_string(gaussians), model, frames, {}, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Dims, DimensionTest,
                         ::testing::Values(1, 2, 8, 9, 15, 16, 20, 31, 32, 43, 44, 47, 48, 49, 64, 65, 90,
                                           100, 128));

// --- Alignments, posteriors, several sets. --------------------------------

// One pair per frame to a random state among those not in `skip`.
std::vector<StatsPair> Alignment(int64_t frames, int num_states, const std::vector<int>& skip, uint64_t seed) {
  std::mt19937 random(seed);
  std::vector<int> states;
  for (int s = 0; s < num_states; ++s) {
    if (std::find(skip.begin(), skip.end(), s) == skip.end()) states.push_back(s);
  }
  std::vector<StatsPair> pairs;
  for (int64_t t = 0; t < frames; ++t) {
    pairs.push_back({static_cast<int32_t>(t), states[random() % states.size()], 1.0f});
  }
  return pairs;
}

TEST(CudaStatsBackendTest, AlignmentWithStatesThatGetNoFrames) {
  SKIP_WITHOUT_GPU();
  // 30 states of 1..300 Gaussians: single-tile (fused) and multi-tile states.
  const DiagGmmModel model = Model(30, 1, 300, 39, 21);
  const FloatMatrix frames = DrawModelFrames(model, 20000, 8);
  CheckAgainstReference("alignment_D39_S30", model, frames, Alignment(20000, 30, {0, 4, 17, 29}, 3), 1);
}

TEST(CudaStatsBackendTest, PosteriorsWithZeroWeights) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel model = Model(12, 1, 150, 40, 22);
  const FloatMatrix frames = DrawModelFrames(model, 5000, 9);
  std::mt19937 random(4);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < 5000; ++t) {
    const int count = 1 + static_cast<int>(random() % 3);
    for (int k = 0; k < count; ++k) {
      const float weight = random() % 5 == 0 ? 0.0f : static_cast<float>(random() % 1000) / 1000.0f;
      pairs.push_back({t, static_cast<int32_t>(random() % 12), weight});
    }
  }
  // Frames in no pair at all, and pairs listed out of frame order.
  std::shuffle(pairs.begin(), pairs.end(), random);
  pairs.resize(pairs.size() - 500);
  CheckAgainstReference("posteriors_D40_S12", model, frames, pairs, 1);
}

TEST(CudaStatsBackendTest, SeveralSets) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel model = Model(5, 1, 100, 13, 23);
  const FloatMatrix frames = DrawModelFrames(model, 8000, 10);
  std::mt19937 random(5);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < 8000; ++t) {
    // Set 1 gets nothing; sets 0 and 2 share frames.
    const int set = (t % 3 == 0) ? 0 : 2;
    pairs.push_back({t, static_cast<int32_t>(set * 5 + random() % 5), 0.5f + (t % 7) * 0.1f});
  }
  CheckAgainstReference("sets_D13_S5_K3", model, frames, pairs, 3);
}

TEST(CudaStatsBackendTest, SmallChunksAndBatchesGiveTheSameStatistics) {
  SKIP_WITHOUT_GPU();
  CudaStatsOptions tiny;
  tiny.max_chunk_pairs = 1000;          // segments cut across chunks
  tiny.max_partial_bytes = 8 * 40 * 1024;  // a handful of items per launch
  const DiagGmmModel big = Model(1, 2048, 2048, 39, 24);
  CheckAgainstReference("chunks_global_D39_M2048", big, DrawModelFrames(big, 5000, 11), {}, 1, tiny);
  const DiagGmmModel model = Model(30, 1, 300, 39, 25);
  const FloatMatrix frames = DrawModelFrames(model, 6000, 12);
  CheckAgainstReference("chunks_alignment_D39_S30", model, frames, Alignment(6000, 30, {3}, 6), 1, tiny);
}

TEST(CudaStatsBackendTest, AccumulateAddsToWhatIsThere) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel model = Model(1, 64, 64, 39, 26);
  const FloatMatrix frames = DrawModelFrames(model, 3000, 13);
  auto cuda = NewCuda();
  ASSERT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok());
  GmmStats once = GmmStats::ForModel(model), twice = GmmStats::ForModel(model);
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &once).ok());
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &twice).ok());
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &twice).ok());
  for (size_t i = 0; i < once.occupancy.size(); ++i) EXPECT_DOUBLE_EQ(twice.occupancy[i], 2 * once.occupancy[i]);
  for (size_t i = 0; i < once.mean_acc.size(); ++i) EXPECT_DOUBLE_EQ(twice.mean_acc[i], 2 * once.mean_acc[i]);
  EXPECT_DOUBLE_EQ(twice.total_weight, 6000.0);
}

void ExpectBitIdentical(const GmmStats& a, const GmmStats& b);

// --- The other accumulation variant of the statistics kernel. ------------

// The variant that is not the default (stats_policy.h: float64 registers,
// or float32 over kStatsFlushTilesAlt tiles then float64 in the partial
// slot): the cases of the default variant that exercise it.
TEST(CudaStatsBackendTest, OtherSumVariantMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  CudaStatsOptions flush;
  flush.flush_tiles = train_cuda::kStatsOtherFlushTiles;
  flush.kernel = train_cuda::StatsKernelChoice::kFp32;
  for (const GlobalCase c : {GlobalCase{39, 2048, 100000}, GlobalCase{40, 64, 100000}, GlobalCase{13, 3, 65},
                             GlobalCase{39, 128, 1}}) {
    const DiagGmmModel model = Model(1, c.gaussians, c.gaussians, c.dim, 11 + c.gaussians);
    CheckAgainstReference("flush_global_D" + std::to_string(c.dim) + "_M" + std::to_string(c.gaussians) + "_T" +
                              std::to_string(c.frames),
                          model, DrawModelFrames(model, c.frames, 5 + c.frames), {}, 1, flush);
  }
  for (int dim : {1, 20, 48, 49, 100, 128}) {
    for (int gaussians : {1, 70, 128}) {
      const DiagGmmModel model = Model(1, gaussians, gaussians, dim, 100 + dim);
      CheckAgainstReference("flush_dim_D" + std::to_string(dim) + "_M" + std::to_string(gaussians), model,
                            DrawModelFrames(model, 300, 7), {}, 1, flush);
    }
  }
  const DiagGmmModel hmm = Model(30, 1, 300, 39, 21);
  CheckAgainstReference("flush_alignment_D39_S30", hmm, DrawModelFrames(hmm, 20000, 8),
                        Alignment(20000, 30, {0, 4, 17, 29}, 3), 1, flush);
  CudaStatsOptions tiny = flush;
  tiny.max_chunk_pairs = 1000;
  tiny.max_partial_bytes = 8 * 40 * 1024;
  const DiagGmmModel big = Model(1, 2048, 2048, 39, 24);
  CheckAgainstReference("flush_chunks_global_D39_M2048", big, DrawModelFrames(big, 5000, 11), {}, 1, tiny);
}

TEST(CudaStatsBackendTest, OtherSumVariantDeterministicAndDriftFree) {
  SKIP_WITHOUT_GPU();
  CudaStatsOptions flush;
  flush.flush_tiles = train_cuda::kStatsOtherFlushTiles;
  flush.kernel = train_cuda::StatsKernelChoice::kFp32;
  const DiagGmmModel model = Model(1, 8, 8, 39, 29);
  const FloatMatrix frames = DrawModelFrames(model, 10'000'000, 16);
  auto cuda = NewCuda(flush);
  ASSERT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok()) << block.status();
  GmmStats got = GmmStats::ForModel(model), again = GmmStats::ForModel(model);
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &got).ok());
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &again).ok());
  ExpectBitIdentical(got, again);
  auto want = ParallelReferenceStats(model, frames, {}, 1);
  ASSERT_TRUE(want.ok());
  ExpectClose("flush_drift_D39_M8_T1e7", got, *want, {.normwise = 2e-6, .elementwise = 1e-4, .loglike = 1e-6});
}

// --- Kept scores against scoring again. -----------------------------------

// Statistics of `pairs` through a fresh float32-kernel backend of
// `options`, which must keep the scores of `kept_chunks` chunks.
GmmStats CudaStats(const DiagGmmModel& model, const FloatMatrix& frames, const std::vector<StatsPair>& pairs,
                   CudaStatsOptions options, int64_t kept_chunks) {
  options.kernel = train_cuda::StatsKernelChoice::kFp32;
  auto cuda = NewCuda(options);
  GmmStats stats = GmmStats::ForModel(model);
  if (cuda == nullptr) return stats;
  EXPECT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  EXPECT_TRUE(block.ok()) << block.status();
  if (block.ok()) EXPECT_TRUE(cuda->Accumulate(**block, pairs, &stats).ok());
  EXPECT_EQ(KeptScoreChunks(*cuda), kept_chunks);
  for (double v : stats.mean_acc) EXPECT_TRUE(std::isfinite(v));  // (bit-equal NaNs would compare equal)
  return stats;
}

// The kept-score kernel gets the bits the statistics kernel gets by scoring
// again (both kernels score with the same code) for the same chunks: global
// GMMs and an alignment of single- and multi-tile states, chunks cut by the
// score budget and by the pair bound (mid-tile), both accumulation variants.
// (Other chunks add the float64 partials in another order.) Scratch is
// poisoned, so a score the LSE kernel did not write shows as NaN.
TEST(CudaStatsBackendTest, KeptScoresEqualScoringAgainBitForBit) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel big = Model(1, 2048, 2048, 39, 31);
  const FloatMatrix big_frames = DrawModelFrames(big, 90001, 17);
  const DiagGmmModel odd = Model(1, 200, 200, 40, 32);  // 4 tiles, the last mostly padding
  const FloatMatrix odd_frames = DrawModelFrames(odd, 70001, 18);
  const DiagGmmModel hmm = Model(40, 1, 200, 13, 33);
  const FloatMatrix hmm_frames = DrawModelFrames(hmm, 50000, 19);
  const std::vector<StatsPair> pairs = Alignment(50000, 40, {2}, 8);
  for (int flush : {0, train_cuda::kStatsFlushTilesAlt}) {
    CudaStatsOptions rescore;
    rescore.flush_tiles = flush;
    rescore.max_score_bytes = 0;
    CudaStatsOptions kept = rescore;
    kept.max_score_bytes = int64_t{1} << 30;
    kept.kept_gemm = train_cuda::KeptStatsGemm::kFfma;  // the float64 GEMM sums otherwise (its own tests below)
    ExpectBitIdentical(CudaStats(big, big_frames, {}, kept, 1), CudaStats(big, big_frames, {}, rescore, 0));
    // Chunks of the minimum 32768 pairs (90001 = 2 x 32768 + 24465), set by
    // the score budget on one side and by the pair bound on the other.
    CudaStatsOptions kept_small = kept, rescore_small = rescore;
    kept_small.max_score_bytes = train_cuda::kMinKeptChunkPairs * 2048 * 4;
    rescore_small.max_chunk_pairs = train_cuda::kMinKeptChunkPairs;
    ExpectBitIdentical(CudaStats(big, big_frames, {}, kept_small, 3),
                       CudaStats(big, big_frames, {}, rescore_small, 0));
    CudaStatsOptions kept_cut = kept, rescore_cut = rescore;
    kept_cut.max_chunk_pairs = rescore_cut.max_chunk_pairs = 20000;
    ExpectBitIdentical(CudaStats(big, big_frames, {}, kept_cut, 5), CudaStats(big, big_frames, {}, rescore_cut, 0));
    ExpectBitIdentical(CudaStats(odd, odd_frames, {}, kept_cut, 4), CudaStats(odd, odd_frames, {}, rescore_cut, 0));
    ExpectBitIdentical(CudaStats(hmm, hmm_frames, pairs, kept_cut, 3),
                       CudaStats(hmm, hmm_frames, pairs, rescore_cut, 0));
    // A budget a pair tile short of kMinKeptChunkPairs scores again.
    CudaStatsOptions short_budget = kept;
    short_budget.max_score_bytes = (train_cuda::kMinKeptChunkPairs - 64) * 2048 * 4;
    ExpectBitIdentical(CudaStats(big, big_frames, {}, short_budget, 0), CudaStats(big, big_frames, {}, rescore, 0));
  }
}

// Scoring again (a budget just too small for kMinKeptChunkPairs pairs of
// kept scores, or none) is still right against the float64 reference.
TEST(CudaStatsBackendTest, ScoringAgainMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  CudaStatsOptions rescore;
  rescore.kernel = train_cuda::StatsKernelChoice::kFp32;
  rescore.max_score_bytes = train_cuda::kMinKeptChunkPairs * 2048 * 4 - 1;
  const DiagGmmModel big = Model(1, 2048, 2048, 39, 34);
  CheckAgainstReference("rescore_global_D39_M2048", big, DrawModelFrames(big, 20000, 20), {}, 1, rescore);
  rescore.max_score_bytes = 0;  // (the bound above would keep the scores of states of 300)
  const DiagGmmModel hmm = Model(30, 1, 300, 40, 35);
  CheckAgainstReference("rescore_alignment_D40_S30", hmm, DrawModelFrames(hmm, 20000, 21),
                        Alignment(20000, 30, {5}, 9), 1, rescore);
}

// --- The float64 tensor-core statistics GEMM (sm_90; skips elsewhere). ---

CudaStatsOptions Fp64MmaOptions() {
  CudaStatsOptions options;
  options.kernel = train_cuda::StatsKernelChoice::kFp32;
  options.kept_gemm = train_cuda::KeptStatsGemm::kFp64Mma;
  options.lse_min_tiles = 2;  // the float64 log-sum-exp kernel for every multi-tile state
  return options;
}

// States of 4 tiles, the last mostly padding, over chunks cut mid-tile by
// the pair bound; every instance's dimensions (x tiles 1 to 5: D = 1, 8, 9,
// 17, 25, 33, and 40 above); an
// alignment of single- and multi-tile states with weights 0 to 1.
TEST(CudaStatsBackendTest, Fp64MmaMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel odd = Model(1, 200, 200, 40, 41);
  if (!Fp64MmaServes(odd)) GTEST_SKIP() << "the float64 tensor-core kernel needs sm_90";
  const FloatMatrix odd_frames = DrawModelFrames(odd, 30001, 40);
  CheckAgainstReference("fp64mma_global_D40_M200", odd, odd_frames, {}, 1, Fp64MmaOptions());
  CudaStatsOptions cut = Fp64MmaOptions();
  cut.max_chunk_pairs = 10000;
  CheckAgainstReference("fp64mma_global_D40_M200_chunks", odd, odd_frames, {}, 1, cut);
  for (int dim : {1, 8, 9, 17, 25, 33}) {
    const DiagGmmModel model = Model(1, 128, 128, dim, 300 + dim);
    CheckAgainstReference("fp64mma_dim_D" + std::to_string(dim) + "_M128", model, DrawModelFrames(model, 777, 41), {},
                          1, Fp64MmaOptions());
  }
  const DiagGmmModel hmm = Model(30, 1, 300, 39, 42);
  std::vector<StatsPair> pairs = Alignment(20000, 30, {5}, 43);
  std::mt19937 random(44);
  for (StatsPair& pair : pairs) pair.weight = random() % 4 == 0 ? 0.0f : static_cast<float>(random() % 1000) / 1000.0f;
  const FloatMatrix hmm_frames = DrawModelFrames(hmm, 20000, 45);
  CheckAgainstReference("fp64mma_alignment_D39_S30", hmm, hmm_frames, pairs, 1, Fp64MmaOptions());
  // One chunk's LSE items split over both log-sum-exp kernels: states of 3
  // to 5 tiles on the float64 one, of 2 on the float32 one.
  CudaStatsOptions mixed = Fp64MmaOptions();
  mixed.lse_min_tiles = 3;
  CheckAgainstReference("fp64mma_alignment_mixed_lse_D39_S30", hmm, hmm_frames, pairs, 1, mixed);
}

// The same bits twice, and over 10^7 frames no drift from the float64 sums.
TEST(CudaStatsBackendTest, Fp64MmaDeterministicAndDriftFree) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel model = Model(1, 128, 128, 39, 46);
  if (!Fp64MmaServes(model)) GTEST_SKIP() << "the float64 tensor-core kernel needs sm_90";
  const FloatMatrix frames = DrawModelFrames(model, 10'000'000, 47);
  auto cuda = NewCuda(Fp64MmaOptions());
  ASSERT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok()) << block.status();
  GmmStats a = GmmStats::ForModel(model), b = GmmStats::ForModel(model);
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &a).ok());
  EXPECT_GE(KeptScoreChunks(*cuda), 2);  // 10^7 pairs of 128 scores: more than one chunk
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &b).ok());
  ExpectBitIdentical(a, b);
  auto want = ParallelReferenceStats(model, frames, {}, 1);
  ASSERT_TRUE(want.ok());
  ExpectClose("fp64mma_drift_D39_M128_T1e7", a, *want, {.normwise = 2e-6, .elementwise = 1e-4, .loglike = 1e-6});
}

// Posteriors far below 1 but not zero in float32 (faint twins of every 7th
// Gaussian, e^-60 of their siblings' posteriors) are counted by both
// kept-score GEMMs: the float64 kernel skips only pairs whose posteriors
// are zero in float32 (MultiplyLivePairs). M = 2048 runs the float64
// log-sum-exp kernel too, on states of 32 tiles.
TEST(CudaStatsBackendTest, FaintPosteriorsAreCounted) {
  SKIP_WITHOUT_GPU();
  const int stride = 7;
  for (int gaussians : {200, 2048}) {
    const DiagGmmModel drawn = Model(1, gaussians, gaussians, 39, 50 + gaussians);
    const DiagGmmModel model = WithFaintGaussians(drawn, stride, -60.0);
    const FloatMatrix frames = DrawModelFrames(drawn, 40000, 51);
    auto want = ParallelReferenceStats(model, frames, {}, 1);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_GT(want->occupancy[0], 1e-30);  // faint, not vanished
    EXPECT_LT(want->occupancy[0], 1e-12);
    for (train_cuda::KeptStatsGemm gemm : {train_cuda::KeptStatsGemm::kFfma, train_cuda::KeptStatsGemm::kFp64Mma}) {
      CudaStatsOptions options = Fp64MmaOptions();
      options.kept_gemm = gemm;
      if (gemm == train_cuda::KeptStatsGemm::kFp64Mma && !Fp64MmaServes(model)) continue;
      auto cuda = NewCuda(options);
      ASSERT_TRUE(cuda->SetModel(model).ok());
      auto block = cuda->LoadFrames(frames.view());
      ASSERT_TRUE(block.ok()) << block.status();
      GmmStats got = GmmStats::ForModel(model);
      ASSERT_TRUE(cuda->Accumulate(**block, {}, &got).ok());
      EXPECT_GE(KeptScoreChunks(*cuda), 1);
      const double error = FaintGaussianError(got, *want, stride);
      const bool fp64 = gemm == train_cuda::KeptStatsGemm::kFp64Mma;
      std::printf("stats_error faint_D39_M%d%s faint_rows %.3g\n", gaussians, fp64 ? "_fp64mma" : "", error);
      EXPECT_LE(error, 1e-4) << gaussians << (fp64 ? " fp64mma" : " ffma");
      ExpectClose("faint_D39_M" + std::to_string(gaussians) + (fp64 ? "_fp64mma" : ""), got, *want);
    }
  }
}

// Models the kernel does not serve are refused when it is asked for by name
// (kAuto takes the float32 GEMM for them instead).
TEST(CudaStatsBackendTest, Fp64MmaRefusesShapesItDoesNotServe) {
  SKIP_WITHOUT_GPU();
  for (const DiagGmmModel& model : {Model(1, 128, 128, train_cuda::kFp64MmaMaxDim + 1, 48),
                                    Model(1, 70, 70, 13, 49)}) {  // 70: tiles of 32
    auto cuda = NewCuda(Fp64MmaOptions());
    const absl::Status set = cuda->SetModel(model);
    EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument) << set;
    EXPECT_THAT(set.message(), HasSubstr("float64 tensor-core"));
    auto automatic = NewCuda();
    EXPECT_TRUE(automatic->SetModel(model).ok());
  }
}

// --- Determinism: the same request gives the same bits. -------------------

void ExpectBitIdentical(const GmmStats& a, const GmmStats& b) {
  auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
  };
  EXPECT_TRUE(same(a.occupancy, b.occupancy));
  EXPECT_TRUE(same(a.mean_acc, b.mean_acc));
  EXPECT_TRUE(same(a.var_acc, b.var_acc));
  EXPECT_EQ(std::memcmp(&a.total_loglike, &b.total_loglike, sizeof(double)), 0);
}

class KernelTest : public ::testing::TestWithParam<train_cuda::StatsKernelChoice> {
 protected:
  CudaStatsOptions Options() const {
    CudaStatsOptions options;
    options.kernel = GetParam();
    return options;
  }
};

TEST_P(KernelTest, TwoRunsAreBitIdentical) {
  SKIP_WITHOUT_GPU();
  const DiagGmmModel model = Model(1, 2048, 2048, 39, 27);
  const FloatMatrix frames = DrawModelFrames(model, 100000, 14);
  auto cuda = NewCuda(Options());
  ASSERT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok());
  GmmStats a = GmmStats::ForModel(model), b = GmmStats::ForModel(model);
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &a).ok());
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &b).ok());
  ExpectBitIdentical(a, b);
  // A second backend (fresh scratch) too, and an alignment.
  auto other = NewCuda(Options());
  ASSERT_TRUE(other->SetModel(model).ok());
  auto other_block = other->LoadFrames(frames.view());
  ASSERT_TRUE(other_block.ok());
  GmmStats c = GmmStats::ForModel(model);
  ASSERT_TRUE(other->Accumulate(**other_block, {}, &c).ok());
  ExpectBitIdentical(a, c);

  const DiagGmmModel hmm = Model(40, 1, 200, 39, 28);
  const FloatMatrix hmm_frames = DrawModelFrames(hmm, 50000, 15);
  const std::vector<StatsPair> pairs = Alignment(50000, 40, {}, 7);
  ASSERT_TRUE(cuda->SetModel(hmm).ok());
  auto hmm_block = cuda->LoadFrames(hmm_frames.view());
  ASSERT_TRUE(hmm_block.ok());
  GmmStats d = GmmStats::ForModel(hmm), e = GmmStats::ForModel(hmm);
  ASSERT_TRUE(cuda->Accumulate(**hmm_block, pairs, &d).ok());
  ASSERT_TRUE(cuda->Accumulate(**hmm_block, pairs, &e).ok());
  ExpectBitIdentical(d, e);
}

// --- Drift over 10^7 frames against a float64 accumulation. ---------------

TEST_P(KernelTest, DriftOverTenMillionFrames) {
  SKIP_WITHOUT_GPU();
  // M = 8 keeps the float64 reference affordable; D = 39 as in the benchmark.
  const DiagGmmModel model = Model(1, 8, 8, 39, 29);
  const int64_t frames_count = 10'000'000;
  const FloatMatrix frames = DrawModelFrames(model, frames_count, 16);
  auto cuda = NewCuda(Options());
  ASSERT_TRUE(cuda->SetModel(model).ok());
  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok()) << block.status();
  GmmStats got = GmmStats::ForModel(model);
  ASSERT_TRUE(cuda->Accumulate(**block, {}, &got).ok());
  auto want = ParallelReferenceStats(model, frames, {}, 1);
  ASSERT_TRUE(want.ok());
  // Over 10^7 frames the per-frame float32 rounding averages out: the sums
  // must agree far tighter than a single frame does.
  ExpectClose("drift_D39_M8_T1e7" + KernelSuffix(GetParam()), got, *want, {.normwise = 2e-6, .elementwise = 1e-4, .loglike = 1e-6});
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelTest,
                         ::testing::Values(train_cuda::StatsKernelChoice::kFp32,
                                           train_cuda::StatsKernelChoice::kTf32x3),
                         [](const ::testing::TestParamInfo<train_cuda::StatsKernelChoice>& info) {
                           return KernelSuffix(info.param).substr(1);
                         });

// --- Several GPUs (or two backends sharing one): frames sharded. ---------

// Two CUDA backends, on devices 0 and 1 where there are two, else both on
// device 0, as one sharded backend: the float64 reference's statistics, and
// the bits of two runs alike.
TEST(CudaStatsBackendTest, ShardedOverTwoBackendsMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const int second = CudaDeviceCount() > 1 ? 1 : 0;
  auto make = [&] {
    std::vector<std::unique_ptr<StatsBackend>> gpus;
    for (int device : {0, second}) {
      auto gpu = CreateCudaStatsBackend(device, {});
      EXPECT_TRUE(gpu.ok()) << gpu.status();
      gpus.push_back(std::move(*gpu));
    }
    auto sharded = CreateShardedStatsBackend(std::move(gpus));
    EXPECT_TRUE(sharded.ok());
    return std::move(*sharded);
  };
  const DiagGmmModel model = Model(1, 2048, 2048, 39, 41);
  const FloatMatrix frames = DrawModelFrames(model, 100001, 42);
  auto want = ParallelReferenceStats(model, frames, {}, 1);
  ASSERT_TRUE(want.ok());
  GmmStats runs[2] = {GmmStats::ForModel(model), GmmStats::ForModel(model)};
  for (GmmStats& got : runs) {
    auto sharded = make();
    ASSERT_TRUE(sharded->SetModel(model).ok());
    auto block = sharded->LoadFrames(frames.view());
    ASSERT_TRUE(block.ok()) << block.status();
    ASSERT_TRUE(sharded->Accumulate(**block, {}, &got).ok());
  }
  ExpectClose("sharded_global_D39_M2048_T100001_devices_0_" + std::to_string(second), runs[0], *want);
  ExpectBitIdentical(runs[0], runs[1]);

  const DiagGmmModel hmm = Model(30, 1, 300, 39, 43);
  const FloatMatrix hmm_frames = DrawModelFrames(hmm, 20000, 44);
  const std::vector<StatsPair> pairs = Alignment(20000, 30, {2, 7}, 45);
  auto hmm_want = ParallelReferenceStats(hmm, hmm_frames, pairs, 1);
  ASSERT_TRUE(hmm_want.ok());
  auto sharded = make();
  ASSERT_TRUE(sharded->SetModel(hmm).ok());
  auto block = sharded->LoadFrames(hmm_frames.view());
  ASSERT_TRUE(block.ok());
  GmmStats got = GmmStats::ForModel(hmm);
  ASSERT_TRUE(sharded->Accumulate(**block, pairs, &got).ok());
  ExpectClose("sharded_alignment_D39_S30", got, *hmm_want);
}

// --- Bad requests change nothing and say why. ------------------------------

TEST(CudaStatsBackendTest, RejectsBadInputs) {
  SKIP_WITHOUT_GPU();
  auto cuda = NewCuda();
  const DiagGmmModel model = Model(3, 2, 4, 13, 30);
  FloatMatrix frames = DrawModelFrames(model, 10, 17);

  auto early = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(early.ok());
  GmmStats stats = GmmStats::ForModel(model);
  EXPECT_EQ(cuda->Accumulate(**early, {{0, 0, 1.0f}}, &stats).code(), absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE(cuda->SetModel(model).ok());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e20f}) {
    FloatMatrix poisoned = frames;
    poisoned.at(7, 5) = bad;
    const auto loaded = cuda->LoadFrames(poisoned.view());
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("frame 7"));
  }

  auto block = cuda->LoadFrames(frames.view());
  ASSERT_TRUE(block.ok());
  const GmmStats before = stats;
  auto expect_invalid = [&](std::vector<StatsPair> pairs, GmmStats* target) {
    EXPECT_EQ(cuda->Accumulate(**block, pairs, target).code(), absl::StatusCode::kInvalidArgument);
  };
  expect_invalid({}, &stats);                            // several states need pairs
  expect_invalid({{10, 0, 1.0f}}, &stats);               // frame out of range
  expect_invalid({{-1, 0, 1.0f}}, &stats);
  expect_invalid({{0, 3, 1.0f}}, &stats);                // target beyond one set
  expect_invalid({{0, -1, 1.0f}}, &stats);
  expect_invalid({{0, 0, std::numeric_limits<float>::quiet_NaN()}}, &stats);
  expect_invalid({{0, 0, std::numeric_limits<float>::infinity()}}, &stats);
  GmmStats wrong = GmmStats::ForShape(13, {0, 2, 4}, 1);
  expect_invalid({{0, 0, 1.0f}}, &wrong);               // not shaped for the model
  EXPECT_EQ(stats.occupancy, before.occupancy);
  EXPECT_EQ(stats.total_weight, before.total_weight);

  // Frames of another dimension, and a block of another backend.
  const DiagGmmModel model39 = Model(1, 2, 2, 39, 31);
  auto block39 = cuda->LoadFrames(DrawModelFrames(model39, 5, 18).view());
  ASSERT_TRUE(block39.ok());
  EXPECT_EQ(cuda->Accumulate(**block39, {{0, 0, 1.0f}}, &stats).code(), absl::StatusCode::kInvalidArgument);
  auto reference = CreateReferenceStatsBackend();
  auto host_block = reference->LoadFrames(frames.view());
  ASSERT_TRUE(host_block.ok());
  EXPECT_EQ(cuda->Accumulate(**host_block, {{0, 0, 1.0f}}, &stats).code(), absl::StatusCode::kInvalidArgument);

  // Dimensions beyond the kernels.
  const DiagGmmModel model129 = Model(1, 1, 1, 129, 32);
  const absl::Status too_wide = cuda->SetModel(model129);
  EXPECT_EQ(too_wide.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_wide.message()), HasSubstr("128"));

  // The tensor-core kernels asked for beyond their dimensions.
  CudaStatsOptions tensor_cores;
  tensor_cores.kernel = train_cuda::StatsKernelChoice::kTf32x3;
  auto tc = NewCuda(tensor_cores);
  const absl::Status tc_too_wide = tc->SetModel(Model(1, 3, 3, train_cuda::kTcMaxDim + 1, 33));
  EXPECT_EQ(tc_too_wide.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(tc_too_wide.message()), HasSubstr("43"));
  EXPECT_TRUE(tc->SetModel(Model(1, 3, 3, train_cuda::kTcMaxDim, 33)).ok());
}

TEST(CudaStatsBackendTest, FrameMemoryBudgetIsSomeOfTheDevice) {
  SKIP_WITHOUT_GPU();
  auto cuda = NewCuda();
  EXPECT_GT(cuda->frame_memory_budget(), int64_t{1} << 30);
  EXPECT_EQ(cuda->name(), "cuda");
}

}  // namespace
}  // namespace gmmscore
