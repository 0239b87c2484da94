// fMLLR: the fast statistics against the float64 reference (the three
// posterior sources, awkward shapes), the update against the reference
// row-by-row algorithm, the objective never decreasing, recovery of a known
// affine transform, degenerate statistics and the count thresholds.
// Seeds are fresh each run (GMMSCORE_TEST_SEED replays one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/fmllr_reference.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/fmllr_test_util.h"

namespace gmmscore {
namespace {

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

DiagGmmModel Model(int states, int min_g, int max_g, int dim, uint64_t seed) {
  SyntheticModelSpec spec{.num_states = states, .min_gaussians = min_g, .max_gaussians = max_g,
                          .dim = dim, .seed = seed};
  return *GenerateSyntheticModel(spec);
}

FmllrStats FastStats(const DiagGmmModel& model, const FloatMatrix& frames,
                     const std::vector<StatsPair>& pairs) {
  FmllrStats stats = FmllrStats::ForDim(model.dim());
  const absl::StatusOr<double> loglike = FmllrAccumulator(model).Accumulate(frames.view(), pairs, &stats);
  EXPECT_TRUE(loglike.ok()) << loglike.status();
  return stats;
}

void ExpectStatsMatchReference(const DiagGmmModel& model, const FloatMatrix& frames,
                               const std::vector<StatsPair>& pairs) {
  FmllrStats want = FmllrStats::ForDim(model.dim()), got = FmllrStats::ForDim(model.dim());
  const absl::StatusOr<double> want_loglike =
      AccumulateFmllrStatsReference(model, frames.view(), pairs, &want);
  const absl::StatusOr<double> got_loglike =
      FmllrAccumulator(model).Accumulate(frames.view(), pairs, &got);
  ASSERT_TRUE(want_loglike.ok()) << want_loglike.status();
  ASSERT_TRUE(got_loglike.ok()) << got_loglike.status();
  const double error = MaxStatsError(got, want);
  EXPECT_LT(error, 1e-10);
  EXPECT_NEAR(*got_loglike, *want_loglike, 1e-10 * std::fabs(*want_loglike) + 1e-10);
  std::printf("D %d frames %lld pairs %zu: max relative error %.3g\n", model.dim(),
              static_cast<long long>(frames.rows()), pairs.size(), error);
}

// max |a - b| / max(1, |b|).
double MaxTransformError(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i])));
  }
  return worst;
}

void ExpectNonDecreasing(const std::vector<double>& objective) {
  for (size_t i = 1; i < objective.size(); ++i) {
    EXPECT_GE(objective[i], objective[i - 1] - 1e-10 * std::fabs(objective[i - 1]))
        << "sweep " << i;
  }
}

void ExpectFinite(const FmllrResult& result) {
  for (double v : result.transform) ASSERT_TRUE(std::isfinite(v));
  for (double v : result.report.objective) ASSERT_TRUE(std::isfinite(v));
  EXPECT_TRUE(std::isfinite(result.report.gain_per_frame));
}

FmllrOptions AlwaysFull(int iterations = 10) {
  FmllrOptions options;
  options.num_iterations = iterations;
  options.min_count = 0.0;
  options.min_count_full = 0.0;
  return options;
}

// ---------------------------------------------------------------- statistics

TEST(FmllrStatsTest, GlobalGmmMatchesReferenceOnAwkwardShapes) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  struct Shape { int dim, gaussians; int64_t frames; };
  for (const Shape& s : {Shape{1, 1, 1}, Shape{1, 4, 300}, Shape{13, 1, 0}, Shape{13, 1, 1},
                         Shape{13, 7, 1025}, Shape{39, 3, 1}, Shape{39, 5, 301}}) {
    SCOPED_TRACE(testing::Message() << "D " << s.dim << " M " << s.gaussians << " T " << s.frames);
    const DiagGmmModel model = Model(1, s.gaussians, s.gaussians, s.dim, seed);
    ExpectStatsMatchReference(model, GenerateSyntheticFeatures(model, s.frames, seed + 1), {});
  }
}

TEST(FmllrStatsTest, AlignmentMatchesReference) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int dim : {1, 13, 39}) {
    SCOPED_TRACE(testing::Message() << "D " << dim);
    const DiagGmmModel model = Model(30, 1, 6, dim, seed + dim);
    const FloatMatrix frames = GenerateSyntheticFeatures(model, 2100, seed + 2);
    std::vector<StatsPair> pairs;
    for (int t = 0; t < frames.rows(); ++t) {
      if (rng() % 5 == 0) continue;  // frames with no pair (silence left out)
      pairs.push_back({t, static_cast<int32_t>(rng() % 30), 1.0f});
    }
    ExpectStatsMatchReference(model, frames, pairs);
  }
}

TEST(FmllrStatsTest, WeightedPosteriorsInAnyOrderMatchReference) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const DiagGmmModel model = Model(12, 2, 5, 13, seed);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 2500, seed + 3);
  std::vector<StatsPair> pairs;
  for (int k = 0; k < 3; ++k) {  // each frame in up to three pairs, scattered
    for (int t = 0; t < frames.rows(); ++t) {
      const float w = (k == 2) ? 0.0f : unit(rng);
      pairs.push_back({t, static_cast<int32_t>(rng() % 12), w});
    }
  }
  std::shuffle(pairs.begin(), pairs.end(), rng);
  ExpectStatsMatchReference(model, frames, pairs);
}

TEST(FmllrStatsTest, AccumulatesOntoWhatIsThereAndAdds) {
  const DiagGmmModel model = Model(1, 4, 4, 13, 3);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 500, 4);
  const FmllrStats once = FastStats(model, frames, {});
  FmllrStats twice = once;
  ASSERT_TRUE(FmllrAccumulator(model).Accumulate(frames.view(), {}, &twice).ok());
  FmllrStats sum = once;
  ASSERT_TRUE(sum.Add(once).ok());
  EXPECT_LT(MaxStatsError(twice, sum), 1e-14);
  EXPECT_DOUBLE_EQ(sum.beta, 1000.0);
  FmllrStats other = FmllrStats::ForDim(12);
  EXPECT_EQ(sum.Add(other).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_DOUBLE_EQ(sum.beta, 1000.0);
}

TEST(FmllrStatsTest, BadRequestsAreRefusedBeforeAnythingIsAdded) {
  const DiagGmmModel model = Model(4, 2, 2, 13, 9);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 10, 1);
  FmllrStats stats = FmllrStats::ForDim(13);
  for (const std::vector<StatsPair>& bad :
       {std::vector<StatsPair>{}, {{10, 0, 1.0f}}, {{-1, 0, 1.0f}}, {{0, 4, 1.0f}},
        {{0, 1, NAN}}, {{0, 1, 1.0f}, {1, -2, 1.0f}}}) {
    EXPECT_EQ(FmllrAccumulator(model).Accumulate(frames.view(), bad, &stats).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(AccumulateFmllrStatsReference(model, frames.view(), bad, &stats).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  FmllrStats wrong = FmllrStats::ForDim(12);
  EXPECT_EQ(FmllrAccumulator(model).Accumulate(frames.view(), {{0, 0, 1.0f}}, &wrong).status().code(),
            absl::StatusCode::kInvalidArgument);
  FloatMatrix poisoned = frames;
  poisoned.row(3)[5] = NAN;
  EXPECT_EQ(FmllrAccumulator(model).Accumulate(poisoned.view(), {{3, 0, 1.0f}}, &stats).status().code(),
            absl::StatusCode::kInvalidArgument);
  FloatMatrix wide(2, 14);
  EXPECT_EQ(FmllrAccumulator(model).Accumulate(wide.view(), {{0, 0, 1.0f}}, &stats).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(stats.beta, 0.0);
  for (double v : stats.g) ASSERT_EQ(v, 0.0);
}

// ---------------------------------------------------------------- the update

TEST(FmllrEstimateTest, FullUpdateMatchesReferenceAndNeverDecreases) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int dim : {1, 2, 13, 39}) {
    SCOPED_TRACE(testing::Message() << "D " << dim);
    const DiagGmmModel model = Model(1, 8, 8, dim, seed + dim);
    // Speaker data: model samples through a known transform, and plain
    // synthetic features (with outliers).
    for (const FloatMatrix& frames : {SpeakerData(model, 4000, rng),
                                      GenerateSyntheticFeatures(model, 3000, seed + 5)}) {
      const FmllrStats stats = FastStats(model, frames, {});
      const absl::StatusOr<FmllrResult> fast = EstimateFmllr(stats, AlwaysFull());
      ASSERT_TRUE(fast.ok()) << fast.status();
      ASSERT_EQ(fast->report.mode, FmllrMode::kFull) << fast->report.reason;
      std::vector<double> objective;
      const std::vector<double> want = FmllrFullReference(stats, IdentityFmllr(dim), 10, &objective);
      const double error = MaxTransformError(fast->transform, want);
      EXPECT_LT(error, 1e-6);
      ASSERT_EQ(fast->report.objective.size(), 11u);
      for (size_t i = 0; i < objective.size(); ++i) {
        EXPECT_NEAR(fast->report.objective[i], objective[i], 1e-9 * std::fabs(objective[i]) + 1e-9);
      }
      ExpectNonDecreasing(fast->report.objective);
      ExpectNonDecreasing(objective);
      EXPECT_GT(fast->report.gain_per_frame, 0.0);
      std::printf("D %d: transform error %.3g, gain %.4f nats/frame over %.0f frames\n", dim, error,
                  fast->report.gain_per_frame, fast->report.count);
    }
  }
}

TEST(FmllrEstimateTest, FullUpdateFromAGivenTransformMatchesReference) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const int dim = 13;
  const DiagGmmModel model = Model(1, 6, 6, dim, seed);
  const FloatMatrix frames = SpeakerData(model, 3000, rng);
  const FmllrStats stats = FastStats(model, frames, {});
  const std::vector<double> start = RandomAffine(frames, rng);
  const absl::StatusOr<FmllrResult> fast = EstimateFmllr(stats, AlwaysFull(5), start);
  ASSERT_TRUE(fast.ok()) << fast.status();
  std::vector<double> objective;
  const std::vector<double> want = FmllrFullReference(stats, start, 5, &objective);
  EXPECT_LT(MaxTransformError(fast->transform, want), 1e-6);
  EXPECT_NEAR(fast->report.objective.front(), FmllrObjectiveReference(stats, start),
              1e-9 * std::fabs(objective.front()));
  ExpectNonDecreasing(fast->report.objective);
}

// Statistics that come from no data: random positive definite G_i, random K.
TEST(FmllrEstimateTest, ObjectiveNeverDecreasesOnRandomStatistics) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 20; ++trial) {
    const int dim = 1 + static_cast<int>(rng() % 20), ext = dim + 1;
    FmllrStats stats = FmllrStats::ForDim(dim);
    stats.beta = 50.0 + 1000.0 * std::fabs(normal(rng));
    for (double& k : stats.k) k = 30.0 * normal(rng);
    for (int i = 0; i < dim; ++i) {
      for (int n = 0; n < 3 * ext; ++n) {  // G_i = sum of outer products
        std::vector<double> v(ext);
        for (double& x : v) x = 5.0 * normal(rng);
        for (int r = 0; r < ext; ++r) {
          for (int c = 0; c < ext; ++c) stats.g_matrix(i)[r * ext + c] += v[r] * v[c];
        }
      }
    }
    const absl::StatusOr<FmllrResult> fast = EstimateFmllr(stats, AlwaysFull(20));
    ASSERT_TRUE(fast.ok()) << fast.status();
    ASSERT_EQ(fast->report.mode, FmllrMode::kFull) << fast->report.reason;
    ExpectNonDecreasing(fast->report.objective);
    std::vector<double> objective;
    EXPECT_LT(MaxTransformError(fast->transform, FmllrFullReference(stats, IdentityFmllr(dim), 20, &objective)),
              1e-6);
  }
}

// With the state of every frame known and one Gaussian per state, the
// posteriors do not depend on the transform: one estimate is the maximum
// likelihood transform, which many frames pin close to the truth.
TEST(FmllrEstimateTest, RecoversAKnownTransformFromAnAlignment) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const int dim = 13;
  const DiagGmmModel model = Model(40, 1, 1, dim, seed);
  std::vector<StatsPair> alignment;
  const FloatMatrix x = SampleModel(model, 40000, rng, &alignment);
  // The speaker's frames o = W0^{-1} x: W0 maps them back to the model.
  const std::vector<double> truth = RandomAffine(x, rng);
  const FloatMatrix observed = Transformed(InverseAffine(truth, dim), x);
  const absl::StatusOr<FmllrResult> result = EstimateFmllr(FastStats(model, observed, alignment), AlwaysFull(30));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectNonDecreasing(result->report.objective);
  const double error = MaxMappedError(result->transform, truth, observed);
  std::printf("alignment: gain %.4f nats/frame, frames mapped within %.4f sd of the truth\n",
              result->report.gain_per_frame, error);
  EXPECT_LT(error, 0.1);
}

// With a global GMM the posteriors follow the transform: multi-pass
// adaptation as Kaldi's scripts do it (statistics of the features under the
// current transform, the estimate composed onto it) closes in on the truth.
TEST(FmllrEstimateTest, MultiPassAdaptationApproachesAKnownTransform) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const int dim = 13;
  const DiagGmmModel model = Model(1, 16, 16, dim, seed);
  const FloatMatrix x = SampleModel(model, 40000, rng);
  // Half the strength of the alignment test's: from the identity, EM over a
  // mixture's posteriors can settle in a local optimum when the speaker is
  // far off (at full strength about one run in 20 did).
  const std::vector<double> truth = RandomAffine(x, rng, 0.5);
  const FloatMatrix observed = Transformed(InverseAffine(truth, dim), x);
  std::vector<double> w = IdentityFmllr(dim);
  const double before = MaxMappedError(w, truth, observed);
  std::printf("identity: frames mapped within %.4f sd of the truth\n", before);
  for (int pass = 0; pass < 4; ++pass) {
    const absl::StatusOr<FmllrResult> step =
        EstimateFmllr(FastStats(model, Transformed(w, observed), {}), AlwaysFull());
    ASSERT_TRUE(step.ok()) << step.status();
    ExpectNonDecreasing(step->report.objective);
    w = *ComposeFmllr(dim, step->transform, w);
    std::printf("pass %d: gain %.4f nats/frame, frames mapped within %.4f sd of the truth\n", pass,
                step->report.gain_per_frame, MaxMappedError(w, truth, observed));
  }
  // The estimate is the maximum-likelihood transform: at least as likely as
  // the truth that made the data.
  EXPECT_GE(LogLikelihoodPerFrame(model, w, observed), LogLikelihoodPerFrame(model, truth, observed) - 1e-3);
  EXPECT_LT(MaxMappedError(w, truth, observed), 0.2);
}

TEST(FmllrEstimateTest, DiagonalAndOffsetMatchReference) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int dim : {1, 13, 39}) {
    SCOPED_TRACE(testing::Message() << "D " << dim);
    const DiagGmmModel model = Model(1, 4, 4, dim, seed + dim);
    const FmllrStats stats = FastStats(model, SpeakerData(model, 200, rng), {});
    FmllrOptions options;
    options.min_count = 0.0;
    options.min_count_full = 1e9;
    for (FmllrMode fallback : {FmllrMode::kDiagonal, FmllrMode::kOffset}) {
      options.fallback = fallback;
      const absl::StatusOr<FmllrResult> fast = EstimateFmllr(stats, options);
      ASSERT_TRUE(fast.ok()) << fast.status();
      ASSERT_EQ(fast->report.mode, fallback) << fast->report.reason;
      const std::vector<double> want = fallback == FmllrMode::kDiagonal ? FmllrDiagonalReference(stats)
                                                                        : FmllrOffsetReference(stats);
      EXPECT_LT(MaxTransformError(fast->transform, want), 1e-9);
      ASSERT_EQ(fast->report.objective.size(), 2u);
      ExpectNonDecreasing(fast->report.objective);
      EXPECT_NEAR(fast->report.objective.back(), FmllrObjectiveReference(stats, want),
                  1e-9 * std::fabs(fast->report.objective.back()));
    }
  }
}

// ---------------------------------------------------------- fallbacks

TEST(FmllrEstimateTest, CountThresholdsChooseTheMode) {
  const DiagGmmModel model = Model(1, 4, 4, 13, 21);
  const FmllrStats stats = FastStats(model, GenerateSyntheticFeatures(model, 300, 22), {});
  struct Case { double min_count, min_count_full; FmllrMode fallback, want; };
  for (const Case& c : {Case{300.0, 300.0, FmllrMode::kDiagonal, FmllrMode::kIdentity},
                        Case{299.0, 300.0, FmllrMode::kDiagonal, FmllrMode::kDiagonal},
                        Case{299.0, 300.0, FmllrMode::kOffset, FmllrMode::kOffset},
                        Case{299.0, 300.0, FmllrMode::kIdentity, FmllrMode::kIdentity},
                        Case{0.0, 299.0, FmllrMode::kOffset, FmllrMode::kFull}}) {
    FmllrOptions options;
    options.min_count = c.min_count;
    options.min_count_full = c.min_count_full;
    options.fallback = c.fallback;
    const absl::StatusOr<FmllrResult> result = EstimateFmllr(stats, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.mode, c.want)
        << c.min_count << " " << c.min_count_full << ": " << result->report.reason;
    EXPECT_EQ(result->report.reason.empty(), c.want == FmllrMode::kFull) << result->report.reason;
    EXPECT_DOUBLE_EQ(result->report.count, 300.0);
    ExpectFinite(*result);
    if (c.want == FmllrMode::kIdentity) {
      EXPECT_EQ(result->transform, IdentityFmllr(13));
    }
  }
  // Kaldi's default of 500 frames for a full transform.
  const absl::StatusOr<FmllrResult> defaults = EstimateFmllr(stats, FmllrOptions());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->report.mode, FmllrMode::kDiagonal);
  EXPECT_THAT(defaults->report.reason, testing::HasSubstr("min_count_full"));
}

TEST(FmllrEstimateTest, NoFramesGiveTheIdentity) {
  const DiagGmmModel model = Model(1, 4, 4, 13, 23);
  const FmllrStats stats = FastStats(model, FloatMatrix(0, 13), {});
  const absl::StatusOr<FmllrResult> result = EstimateFmllr(stats, AlwaysFull());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->report.mode, FmllrMode::kIdentity);
  EXPECT_EQ(result->transform, IdentityFmllr(13));
  EXPECT_EQ(result->report.gain_per_frame, 0.0);
  ExpectFinite(*result);
}

TEST(FmllrEstimateTest, DegenerateStatisticsFallBackWithoutNaN) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const int dim = 13;
  const DiagGmmModel model = Model(1, 4, 4, dim, seed);
  FloatMatrix constant_dim = GenerateSyntheticFeatures(model, 2000, seed + 1);
  for (int64_t t = 0; t < constant_dim.rows(); ++t) constant_dim.row(t)[4] = 3.0f;
  struct Case { const char* name; FloatMatrix frames; FmllrMode want; };
  for (const Case& c : {Case{"one frame", GenerateSyntheticFeatures(model, 1, seed), FmllrMode::kOffset},
                        Case{"fewer frames than D + 1", GenerateSyntheticFeatures(model, 8, seed),
                             FmllrMode::kDiagonal},
                        Case{"a constant dimension", constant_dim, FmllrMode::kOffset}}) {
    SCOPED_TRACE(c.name);
    FmllrOptions options = AlwaysFull();
    options.fallback = FmllrMode::kDiagonal;
    const FmllrStats stats = FastStats(model, c.frames, {});
    const absl::StatusOr<FmllrResult> result = EstimateFmllr(stats, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.mode, c.want) << result->report.reason;
    EXPECT_THAT(result->report.reason, testing::HasSubstr("singular"));
    ExpectFinite(*result);
    ExpectNonDecreasing(result->report.objective);
  }
}

TEST(FmllrEstimateTest, IndefiniteStatisticsFallBack) {
  // Negative posterior weights (as discriminative training gives) can leave
  // G_i indefinite: neither full nor diagonal nor offset may be used.
  const DiagGmmModel model = Model(1, 2, 2, 3, 31);
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 100, 32);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < 100; ++t) pairs.push_back({t, 0, t < 50 ? 1.0f : -2.0f});
  FmllrStats stats = FastStats(model, frames, pairs);
  stats.beta = 10.0;  // a count that allows every mode
  const absl::StatusOr<FmllrResult> result = EstimateFmllr(stats, AlwaysFull());
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFinite(*result);
  EXPECT_EQ(result->report.mode, FmllrMode::kIdentity) << result->report.reason;
}

TEST(FmllrEstimateTest, BadArgumentsAreRefused) {
  const int dim = 3;
  const DiagGmmModel model = Model(1, 2, 2, dim, 41);
  const FmllrStats stats = FastStats(model, GenerateSyntheticFeatures(model, 100, 42), {});
  auto code = [&](const FmllrOptions& o, std::vector<double> initial = {}) {
    return EstimateFmllr(stats, o, initial).status().code();
  };
  FmllrOptions bad = AlwaysFull();
  bad.num_iterations = -1;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = AlwaysFull();
  bad.min_count = 10.0;  // above min_count_full 0
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = AlwaysFull();
  bad.fallback = FmllrMode::kFull;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = AlwaysFull();
  bad.singular_ratio = 1.0;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(AlwaysFull(), std::vector<double>(5, 1.0)), absl::StatusCode::kInvalidArgument);
  std::vector<double> singular(dim * (dim + 1), 0.0);
  EXPECT_EQ(code(AlwaysFull(), singular), absl::StatusCode::kInvalidArgument);
  std::vector<double> not_finite = IdentityFmllr(dim);
  not_finite[3] = NAN;
  EXPECT_EQ(code(AlwaysFull(), not_finite), absl::StatusCode::kInvalidArgument);
  FmllrStats poisoned = stats;
  poisoned.g[7] = INFINITY;
  EXPECT_EQ(EstimateFmllr(poisoned, AlwaysFull()).status().code(), absl::StatusCode::kInvalidArgument);
  FmllrStats malformed = stats;
  malformed.k.pop_back();
  EXPECT_EQ(EstimateFmllr(malformed, AlwaysFull()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FmllrObjective(stats, singular).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComposeFmllr(dim, IdentityFmllr(dim), IdentityFmllr(2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FmllrEstimateTest, HelpersDoWhatTheySay) {
  std::mt19937_64 rng(7);
  const int dim = 4;
  const DiagGmmModel model = Model(1, 2, 2, dim, 8);
  const std::vector<double> w = RandomAffine(SampleModel(model, 100, rng), rng);
  EXPECT_LT(MaxTransformError(*ComposeFmllr(dim, w, InverseAffine(w, dim)), IdentityFmllr(dim)), 1e-12);
  EXPECT_EQ(*ComposeFmllr(dim, IdentityFmllr(dim), w), w);
  const FmllrStats stats = FastStats(model, GenerateSyntheticFeatures(model, 50, 9), {});
  EXPECT_NEAR(*FmllrObjective(stats, w), FmllrObjectiveReference(stats, w),
              1e-10 * std::fabs(FmllrObjectiveReference(stats, w)));
  for (FmllrMode mode : {FmllrMode::kIdentity, FmllrMode::kOffset, FmllrMode::kDiagonal, FmllrMode::kFull}) {
    EXPECT_EQ(*ParseFmllrMode(FmllrModeName(mode)), mode);
  }
  EXPECT_EQ(ParseFmllrMode("affine").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
