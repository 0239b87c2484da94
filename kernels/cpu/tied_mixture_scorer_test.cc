#include "kernels/cpu/tied_mixture_scorer.h"

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/core/feature_values.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tied_mixture_reference.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

struct Shape {
  std::vector<FeatureStream> streams;
  int codebooks;
  int gaussians;  // per codebook and stream
  int states;
};

// MFCC-scale random tied-mixture model: state s uses codebook s % codebooks;
// weights are random, normalised, some exactly 0.
std::shared_ptr<const TiedMixtureModel> RandomModel(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.05, 1.0);
  TiedMixtureModelBuilder builder(shape.streams);
  for (int c = 0; c < shape.codebooks; ++c) {
    std::vector<std::vector<double>> means(shape.streams.size()), vars(shape.streams.size());
    std::vector<CodebookStreamParams> params;
    for (size_t f = 0; f < shape.streams.size(); ++f) {
      for (int i = 0; i < shape.gaussians * shape.streams[f].dim; ++i) {
        means[f].push_back(5.0 * normal(rng) + (f == 0 && i % shape.streams[f].dim == 0 ? 40.0 : 0.0));
        vars[f].push_back(0.2 + 3.0 * uniform(rng));
      }
      params.push_back({means[f], vars[f]});
    }
    EXPECT_TRUE(builder.AddCodebook(params).ok());
  }
  for (int s = 0; s < shape.states; ++s) {
    std::vector<std::vector<double>> w(shape.streams.size());
    std::vector<absl::Span<const double>> spans;
    for (size_t f = 0; f < shape.streams.size(); ++f) {
      double sum = 0.0;
      for (int g = 0; g < shape.gaussians; ++g) {
        const double v = (g > 0 && (s + g) % 7 == 0) ? 0.0 : std::pow(uniform(rng), 3.0);
        w[f].push_back(v);
        sum += v;
      }
      for (double& v : w[f]) v = std::log(v / sum);
      spans.push_back(w[f]);
    }
    EXPECT_TRUE(builder.AddState(s % shape.codebooks, spans).ok());
  }
  absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
  EXPECT_TRUE(model.ok()) << model.status();
  return std::make_shared<const TiedMixtureModel>(*std::move(model));
}

FloatMatrix RandomFeatures(int64_t frames, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  FloatMatrix features(frames, dim);
  for (int64_t t = 0; t < frames; ++t) {
    for (int d = 0; d < dim; ++d) features.at(t, d) = normal(rng) + (d == 0 ? 40.0f : 0.0f);
    if (t % 17 == 5) features.at(t, dim - 1) += 60.0f;  // outlier frames
  }
  return features;
}

double MaxError(const FloatMatrix& scores, const std::vector<double>& reference) {
  double worst = 0.0;
  for (int64_t i = 0; i < scores.rows() * scores.cols(); ++i) {
    const double error = std::abs(scores.data()[i] - reference[i]);
    worst = std::max(worst, std::isnan(error) ? INFINITY : error / std::max(1.0, std::abs(reference[i]) / 256.0));
  }
  return worst;
}

class TiedMixtureScorerShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(TiedMixtureScorerShapes, MatchesFloat64Reference) {
  const Shape& shape = GetParam();
  const auto model = RandomModel(shape, 7);
  const FloatMatrix features = RandomFeatures(75, model->dim(), 11);  // a partial last block
  TiedMixtureCpuScorer scorer(model, {.num_threads = 2, .frames_per_block = 32});
  FloatMatrix loglikes;
  ASSERT_TRUE(scorer.Score(features.view(), &loglikes).ok());
  ASSERT_EQ(loglikes.rows(), 75);
  ASSERT_EQ(loglikes.cols(), shape.states);
  const double error = MaxError(loglikes, TiedMixtureReferenceLogLikelihoods(*model, features.view()));
  RecordProperty("max_normalized_error", std::to_string(error));
  std::printf("max normalized error vs float64: %.3g nats\n", error);
  EXPECT_LT(error, 2e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TiedMixtureScorerShapes,
    ::testing::Values(
        // PTM-like: 3 streams of 13, 6 codebooks of 32, 40 states.
        Shape{{{0, 13}, {13, 13}, {26, 13}}, 6, 32, 40},
        // semi-continuous s2_4x-like: 4 streams, 1 codebook of 64.
        Shape{{{0, 12}, {12, 24}, {36, 3}, {39, 12}}, 1, 64, 30},
        // continuous: a codebook per state, 1 stream.
        Shape{{{0, 39}}, 25, 8, 25}));

TEST(TiedMixtureScorerTest, SingleStreamAgreesWithDiagGmmBackend) {
  const auto tied = RandomModel(Shape{{{0, 13}}, 4, 16, 12}, 3);
  absl::StatusOr<DiagGmmModel> diag = tied->ToDiagGmmModel();
  ASSERT_TRUE(diag.ok()) << diag.status();
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(diag));
  const FloatMatrix features = RandomFeatures(40, 13, 5);
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({.num_threads = 2});
  auto prepared = cpu->Prepare(shared);
  ASSERT_TRUE(prepared.ok());
  ScoreResult expected;
  ASSERT_TRUE(cpu->Score(**prepared, features.view(), {}, &expected).ok());
  TiedMixtureCpuScorer scorer(tied, {.num_threads = 1});
  FloatMatrix loglikes;
  ASSERT_TRUE(scorer.Score(features.view(), &loglikes).ok());
  EXPECT_LT(MaxError(loglikes, ReferenceLogLikelihoods(*shared, features.view())), 2e-3);
  for (int64_t t = 0; t < 40; ++t) {
    for (int s = 0; s < 12; ++s) {
      EXPECT_NEAR(loglikes.at(t, s), expected.loglikes.at(t, s), 2e-3 * std::max(1.0f, std::abs(expected.loglikes.at(t, s)) / 256)) << t << " " << s;
    }
  }
}

TEST(TiedMixtureScorerTest, StateSubsetScoresLikeTheWholeModel) {
  // An aligner scores only its graph's senones: a subset model, states in
  // any order, codebooks dropped, must give the whole model's scores.
  const auto tied = RandomModel(Shape{{{0, 13}, {13, 13}, {26, 13}}, 6, 32, 40}, 11);
  const std::vector<int32_t> keep = {39, 3, 17, 0, 22};
  absl::StatusOr<TiedMixtureModel> subset = tied->SubsetStates(keep);
  ASSERT_TRUE(subset.ok()) << subset.status();
  EXPECT_EQ(subset->num_states(), 5);
  EXPECT_LT(subset->num_codebooks(), tied->num_codebooks());
  const FloatMatrix features = RandomFeatures(30, 39, 12);
  const std::vector<double> whole = TiedMixtureReferenceLogLikelihoods(*tied, features.view());
  const std::vector<double> part = TiedMixtureReferenceLogLikelihoods(*subset, features.view());
  for (int64_t t = 0; t < 30; ++t) {
    for (size_t i = 0; i < keep.size(); ++i) EXPECT_EQ(part[t * keep.size() + i], whole[t * 40 + keep[i]]) << t;
  }
  TiedMixtureCpuScorer scorer(std::make_shared<const TiedMixtureModel>(*std::move(subset)), {.num_threads = 1});
  FloatMatrix loglikes;
  ASSERT_TRUE(scorer.Score(features.view(), &loglikes).ok());
  std::vector<double> want;
  for (int64_t t = 0; t < 30; ++t) {
    for (int32_t s : keep) want.push_back(whole[t * 40 + s]);
  }
  EXPECT_LT(MaxError(loglikes, want), 2e-3);
  EXPECT_EQ(tied->SubsetStates({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tied->SubsetStates({40}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TiedMixtureScorerTest, FarFramesFallBackToLogDomain) {
  // A frame ~1000 sigma away from a state's only weighted Gaussian while
  // another of the codebook (weight 0 for this state) sits on it: the linear
  // mix underflows and the exact path must take over.
  TiedMixtureModelBuilder builder({{0, 1}});
  const std::vector<double> means = {0.0, 1000.0}, vars = {1.0, 1.0};
  const CodebookStreamParams streams[] = {{means, vars}};
  ASSERT_TRUE(builder.AddCodebook(streams).ok());
  const std::vector<double> w = {0.0, -std::numeric_limits<double>::infinity()};
  const absl::Span<const double> weights[] = {w};
  ASSERT_TRUE(builder.AddState(0, weights).ok());
  auto model = std::make_shared<const TiedMixtureModel>(*std::move(builder).Build());
  FloatMatrix features(1, 1, 1000.0f);
  TiedMixtureCpuScorer scorer(model, {.num_threads = 1});
  FloatMatrix loglikes;
  ASSERT_TRUE(scorer.Score(features.view(), &loglikes).ok());
  const double expected = -0.5 * std::log(2 * M_PI) - 0.5 * 1000.0 * 1000.0;
  EXPECT_NEAR(loglikes.at(0, 0), expected, 1e-6 * std::abs(expected));
}

TEST(TiedMixtureScorerTest, RejectsBadFeatures) {
  const auto model = RandomModel(Shape{{{0, 3}}, 1, 2, 2}, 1);
  TiedMixtureCpuScorer scorer(model, {.num_threads = 1});
  FloatMatrix loglikes;
  FloatMatrix wrong(2, 4);
  EXPECT_EQ(scorer.Score(wrong.view(), &loglikes).code(), absl::StatusCode::kInvalidArgument);
  FloatMatrix nan(2, 3);
  nan.at(1, 2) = NAN;
  EXPECT_EQ(scorer.Score(nan.view(), &loglikes).message(),
            absl::StrCat("feature value at frame 1, dimension 2 is nan; ", kFeatureValueRule));
  // Finite, but its square is not: refused too (issue 16), at the first bad value.
  FloatMatrix huge(2, 3);
  huge.at(0, 1) = 3e38f;
  huge.at(1, 0) = -kMaxFeatureMagnitude;  // the largest usable magnitude: accepted
  EXPECT_EQ(scorer.Score(huge.view(), &loglikes).message(),
            absl::StrCat("feature value at frame 0, dimension 1 is 3e+38; ", kFeatureValueRule));
  huge.at(0, 1) = kMaxFeatureMagnitude;
  EXPECT_TRUE(scorer.Score(huge.view(), &loglikes).ok());
}

}  // namespace
}  // namespace gmmscore
