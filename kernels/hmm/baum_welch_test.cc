// Baum-Welch on data drawn from a known dense HMM with GMM emissions:
// the likelihood never falls, the transitions move to the truth, and an
// utterance no state sequence can produce is skipped, not fatal.
#include "kernels/hmm/baum_welch.h"

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/hmm/hmm_test_util.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cpu_stats_backend.h"

namespace gmmscore {
namespace {

// Frames of one utterance: a state sequence from the HMM, each frame drawn
// from its state's GMM.
FloatMatrix Sample(const DenseHmm& hmm, const NaturalGmm& gmm, int64_t frames, std::mt19937_64& rng) {
  auto draw = [&](const std::vector<double>& log_p) {
    std::vector<double> p;
    for (double lp : log_p) p.push_back(std::exp(lp));
    return static_cast<int>(std::discrete_distribution<int>(p.begin(), p.end())(rng));
  };
  std::normal_distribution<double> normal;
  FloatMatrix out(frames, gmm.dim);
  int state = draw(hmm.log_initial);
  for (int64_t t = 0; t < frames; ++t) {
    if (t > 0) {
      const int n = hmm.num_states;
      state = draw(std::vector<double>(hmm.log_transitions.begin() + int64_t{state} * n,
                                       hmm.log_transitions.begin() + int64_t{state + 1} * n));
    }
    const NaturalState& s = gmm.states[hmm.emissions[state]];
    std::discrete_distribution<int> pick(s.weights.begin(), s.weights.end());
    const int g = pick(rng);
    for (int d = 0; d < gmm.dim; ++d) {
      out.row(t)[d] = static_cast<float>(s.means[g * gmm.dim + d] + normal(rng) * std::sqrt(s.variances[g * gmm.dim + d]));
    }
  }
  return out;
}

TEST(BaumWelchTest, LikelihoodNeverFallsAndTransitionsApproachTheTruth) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const DenseHmm truth = *MakeDenseHmm({0, 1, 2}, {0.6, 0.4, 0.0},
                                       {0.8, 0.2, 0.0, 0.0, 0.7, 0.3, 0.25, 0.0, 0.75});
  const NaturalGmm gmm = NaturalGmm::FromModel(
      *GenerateSyntheticModel({.num_states = 3, .min_gaussians = 2, .max_gaussians = 2, .dim = 5, .seed = seed}));
  std::vector<FloatMatrix> utterances;
  for (int u = 0; u < 30; ++u) utterances.push_back(Sample(truth, gmm, 50 + u, rng));
  // Start from uniform transitions (the zeros of the truth are not known).
  HmmWithGmms start{*MakeDenseHmm({0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, std::vector<double>(9, 1.0 / 3)), gmm};
  auto scorer = CreateCpuBackend({});
  auto stats = CreateCpuStatsBackend();
  std::vector<BaumWelchIteration> log;
  BaumWelchOptions options;
  options.iterations = 8;
  options.mle.min_gaussian_occupancy = 1;
  auto trained = TrainDenseHmm(*scorer, *stats, utterances, start, options,
                               [&](const BaumWelchIteration& it) { log.push_back(it); });
  ASSERT_TRUE(trained.ok()) << trained.status();
  ASSERT_EQ(log.size(), 8u);
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_GE(log[i].loglike_per_frame, log[i - 1].loglike_per_frame - 1e-5) << "iteration " << i + 1;
  }
  EXPECT_GT(log.back().loglike_per_frame, log.front().loglike_per_frame);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(std::exp(trained->hmm.log_transition(i, j)), std::exp(truth.log_transition(i, j)), 0.1)
          << i << " -> " << j;
    }
  }
}

TEST(BaumWelchTest, AnUtteranceThatCannotBeAlignedIsSkipped) {
  std::mt19937_64 rng(3);
  // A left-to-right HMM and, between two utterances drawn from it, an empty
  // one, which no state sequence produces: it is skipped every iteration
  // and the others train.
  const DenseHmm hmm = *MakeDenseHmm({0, 1}, {1.0, 0.0}, {0.9, 0.1, 0.0, 1.0});
  const NaturalGmm gmm = NaturalGmm::FromModel(
      *GenerateSyntheticModel({.num_states = 2, .min_gaussians = 1, .max_gaussians = 1, .dim = 3, .seed = 4}));
  std::vector<FloatMatrix> utterances = {Sample(hmm, gmm, 40, rng), FloatMatrix(0, 3), Sample(hmm, gmm, 30, rng)};
  auto scorer = CreateCpuBackend({});
  auto stats = CreateCpuStatsBackend();
  std::vector<BaumWelchIteration> log;
  BaumWelchOptions options;
  options.iterations = 2;
  options.mle.min_gaussian_occupancy = 1;
  auto trained = TrainDenseHmm(*scorer, *stats, utterances, {hmm, gmm}, options,
                               [&](const BaumWelchIteration& it) { log.push_back(it); });
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_EQ(log[0].skipped, std::vector<int>{1});
  EXPECT_EQ(log[0].frames, 70);
  auto likes = DenseHmmLogLikelihoods(*scorer, *trained, utterances);
  ASSERT_TRUE(likes.ok());
  EXPECT_TRUE((*likes)[0].ok());
  EXPECT_FALSE((*likes)[1].ok());
  // Too few GMM states for the emissions: refused.
  HmmWithGmms bad{*MakeDenseHmm({0, 5}, {1.0, 0.0}, {0.5, 0.5, 0.0, 1.0}), gmm};
  EXPECT_EQ(TrainDenseHmm(*scorer, *stats, utterances, bad, options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
