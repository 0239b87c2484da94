// EM end to end on the CPU statistics: likelihood rises, one iteration is
// Kaldi's update of the float64 statistics, mixing-up reaches its target,
// and hostile data (duplicates, empty Gaussians, constant dimensions,
// features of scale 1e6) never gives NaN or Inf.
#include "kernels/train/em_trainer.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cpu_stats_backend.h"
#include "kernels/train/stats_reference.h"

namespace gmmscore {
namespace {

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

DiagGmmModel TrueModel(int gauss, int dim, uint64_t seed) {
  return *GenerateSyntheticModel({.num_states = 1, .min_gaussians = gauss, .max_gaussians = gauss,
                                  .dim = dim, .seed = seed});
}

void ExpectFinite(const NaturalGmm& gmm) {
  for (const NaturalState& s : gmm.states) {
    for (double w : s.weights) ASSERT_TRUE(std::isfinite(w) && w > 0);
    for (double m : s.means) ASSERT_TRUE(std::isfinite(m));
    for (double v : s.variances) ASSERT_TRUE(std::isfinite(v) && v > 0);
  }
}

std::vector<EmIteration> Train(const FloatMatrix& frames, std::optional<NaturalGmm> init,
                               EmOptions options, NaturalGmm* out) {
  std::vector<EmIteration> log;
  auto backend = CreateCpuStatsBackend();
  const std::vector<TrainingBlock> blocks = BlocksOfFrames(frames.view(), 5000);
  auto gmm = TrainGmm(*backend, blocks, std::move(init), options,
                      [&](const EmIteration& it) { log.push_back(it); });
  EXPECT_TRUE(gmm.ok()) << gmm.status();
  if (gmm.ok()) *out = *std::move(gmm);
  return log;
}

TEST(EmTrainerTest, LikelihoodRisesEveryIterationAndApproachesTheTruth) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const DiagGmmModel truth = TrueModel(8, 13, seed);
  const FloatMatrix frames = GenerateSyntheticFeatures(truth, 40000, seed + 1);
  EmOptions options;
  options.num_gauss = 8;
  options.iterations = 15;
  options.seed = seed;
  NaturalGmm trained;
  const std::vector<EmIteration> log = Train(frames, std::nullopt, options, &trained);
  ASSERT_EQ(log.size(), 15u);
  // EM cannot lower the likelihood; the model is stored in float32 between
  // iterations, which near convergence can cost ~1e-6 nats per frame.
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_GE(log[i].loglike_per_frame, log[i - 1].loglike_per_frame - 2e-5) << "iteration " << i + 1;
  }
  auto reference = CreateReferenceStatsBackend();
  ASSERT_TRUE(reference->SetModel(truth).ok());
  auto block = reference->LoadFrames(frames.view());
  GmmStats stats = GmmStats::ForModel(truth);
  ASSERT_TRUE(reference->Accumulate(**block, {}, &stats).ok());
  const double truth_per_frame = stats.total_loglike / stats.total_weight;
  // EM from random frames may settle in a local optimum; it must come close.
  EXPECT_GT(log.back().loglike_per_frame, truth_per_frame - 0.5);
  ExpectFinite(trained);
}

TEST(EmTrainerTest, OneIterationIsKaldisUpdateOfTheFloat64Statistics) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const DiagGmmModel model = TrueModel(16, 39, seed);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 30000, seed + 2);
  // Float64 statistics and the update written out from Kaldi's formulas.
  auto reference = CreateReferenceStatsBackend();
  ASSERT_TRUE(reference->SetModel(model).ok());
  auto block = reference->LoadFrames(frames.view());
  GmmStats stats = GmmStats::ForModel(model);
  ASSERT_TRUE(reference->Accumulate(**block, {}, &stats).ok());
  double total = 0;
  for (double occ : stats.occupancy) total += occ;

  EmOptions options;
  options.num_gauss = 16;
  options.iterations = 1;
  options.mle.remove_low_count_gaussians = false;
  NaturalGmm trained;
  Train(frames, NaturalGmm::FromModel(model), options, &trained);
  const NaturalState& s = trained.states[0];
  for (int g = 0; g < 16; ++g) {
    const double occ = stats.occupancy[g];
    if (occ <= 10) continue;
    EXPECT_NEAR(s.weights[g], occ / total, 1e-5 * occ / total);
    for (int d = 0; d < 39; ++d) {
      const double mean = stats.mean_acc[g * 39 + d] / occ;
      const double var = std::max(stats.var_acc[g * 39 + d] / occ - mean * mean, 1e-3);
      EXPECT_NEAR(s.means[g * 39 + d], mean, 1e-5 * std::sqrt(var));
      EXPECT_NEAR(s.variances[g * 39 + d], var, 1e-5 * var);
    }
  }
}

TEST(EmTrainerTest, MixesUpToTheTarget) {
  const DiagGmmModel truth = TrueModel(8, 13, 4);
  const FloatMatrix frames = GenerateSyntheticFeatures(truth, 20000, 5);
  EmOptions options;
  options.num_gauss = 8;
  options.num_gauss_init = 2;
  options.iterations = 6;
  NaturalGmm trained;
  const std::vector<EmIteration> log = Train(frames, std::nullopt, options, &trained);
  EXPECT_EQ(trained.states[0].num_gaussians(), 8);
  EXPECT_EQ(log.front().num_gauss, 2);
  EXPECT_GT(log.back().loglike_per_frame, log.front().loglike_per_frame);
}

TEST(EmTrainerTest, HostileDataNeverGivesNanOrInf) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const DiagGmmModel truth = TrueModel(4, 5, seed);
  FloatMatrix frames = GenerateSyntheticFeatures(truth, 8000, seed + 1);
  // Half the frames are one frame, repeated; dimension 4 is constant.
  for (int64_t t = 0; t < frames.rows(); ++t) {
    if (t % 2 == 0) std::copy_n(frames.row(1), 5, frames.row(t));
    frames.row(t)[4] = 3.0f;
  }
  // A Gaussian far from all data gets none and is removed.
  NaturalGmm init = NaturalGmm::FromModel(truth);
  for (int d = 0; d < 5; ++d) init.states[0].means[3 * 5 + d] = 1e4;
  EmOptions options;
  options.num_gauss = 4;
  options.iterations = 5;
  NaturalGmm trained;
  std::vector<EmIteration> log = Train(frames, init, options, &trained);
  ExpectFinite(trained);
  EXPECT_GE(log[0].update.removed_gaussians, 1);
  EXPECT_THAT(log[0].update.warnings, testing::Contains(testing::HasSubstr("Gaussian 3")));
  EXPECT_GT(log[0].update.floored_variances, 0);
  for (const EmIteration& it : log) EXPECT_TRUE(std::isfinite(it.loglike_per_frame));

  // Features of scale 1e6 (values and spreads), trained from scratch.
  FloatMatrix big = GenerateSyntheticFeatures(truth, 8000, seed + 2);
  for (int64_t t = 0; t < big.rows(); ++t) {
    for (int d = 0; d < 5; ++d) big.row(t)[d] = big.row(t)[d] * 1e5f + 1e6f;
  }
  options.iterations = 4;
  log = Train(big, std::nullopt, options, &trained);
  ExpectFinite(trained);
  for (const EmIteration& it : log) EXPECT_TRUE(std::isfinite(it.loglike_per_frame));
}

TEST(EmTrainerTest, RefusesBadOptions) {
  auto backend = CreateCpuStatsBackend();
  EmOptions options;
  options.num_gauss = 0;
  EXPECT_FALSE(TrainGmm(*backend, {}, std::nullopt, options, nullptr).ok());
  options.num_gauss = 4;
  EXPECT_FALSE(TrainGmm(*backend, {}, std::nullopt, options, nullptr).ok());  // no frames
}

}  // namespace
}  // namespace gmmscore
