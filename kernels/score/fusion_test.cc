#include "kernels/score/fusion.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/score/fusion_reference.h"

namespace gmmscore {
namespace {

constexpr int64_t kFrames = 157;
constexpr int64_t kStates = 23;

// Log-likelihoods at acoustic scale: around -60 with a spread of 15, and each
// model offset so that the dominant model changes over the stream.
std::vector<FloatMatrix> MakeModels(int models, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(-60.0f, 15.0f);
  std::vector<FloatMatrix> out;
  for (int m = 0; m < models; ++m) {
    FloatMatrix ll(kFrames, kStates);
    for (int64_t t = 0; t < kFrames; ++t) {
      const float drift = (t / 40 % models == m) ? 8.0f : 0.0f;
      for (int64_t s = 0; s < kStates; ++s) ll.at(t, s) = noise(rng) + drift;
    }
    out.push_back(std::move(ll));
  }
  return out;
}

std::vector<std::vector<double>> AsDouble(const std::vector<FloatMatrix>& models) {
  std::vector<std::vector<double>> out;
  for (const FloatMatrix& m : models) out.emplace_back(m.span().begin(), m.span().end());
  return out;
}

// Streams `models` through one ModelFusion in chunks of the given sizes
// (cycled) and checks every fused value and weight against the reference.
void ExpectMatchesReference(const std::vector<FloatMatrix>& models, const FusionOptions& options,
                            const std::vector<int>& chunk_sizes) {
  absl::StatusOr<ModelFusion> fusion = ModelFusion::Create(models.size(), options);
  ASSERT_TRUE(fusion.ok()) << fusion.status();
  const FusionReference ref = ReferenceFuse(AsDouble(models), kFrames, kStates, options);
  const int num_models = models.size();
  int64_t first = 0;
  for (size_t c = 0; first < kFrames; ++c) {
    const int64_t count = std::min<int64_t>(chunk_sizes[c % chunk_sizes.size()], kFrames - first);
    std::vector<ConstMatrixView> views;
    for (const FloatMatrix& m : models) views.push_back(m.view().Rows(first, count));
    FusedScores fused;
    ASSERT_TRUE(fusion->Fuse(views, &fused).ok());
    ASSERT_EQ(fused.loglikes.rows(), count);
    std::vector<int> dominated(num_models, 0);
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t s = 0; s < kStates; ++s) {
        ASSERT_NEAR(fused.loglikes.at(t, s), ref.fused[(first + t) * kStates + s], 1e-4)
            << "frame " << first + t << " state " << s;
      }
      if (options.method != FusionMethod::kMax) {
        for (int m = 0; m < num_models; ++m) {
          ASSERT_NEAR(fused.model_weights[t * num_models + m],
                      ref.weights[(first + t) * num_models + m], 1e-6);
        }
      }
      ++dominated[ref.dominant_per_frame[first + t]];
    }
    for (int m = 0; m < num_models; ++m) {
      EXPECT_NEAR(fused.model_share[m], static_cast<float>(dominated[m]) / count, 1e-6);
    }
    first += count;
  }
}

TEST(ModelFusionTest, MaxMatchesReference) {
  ExpectMatchesReference(MakeModels(3, 1), {.method = FusionMethod::kMax}, {1, 7, 50, 3});
}

TEST(ModelFusionTest, WeightedLogSumExpMatchesReference) {
  ExpectMatchesReference(MakeModels(3, 2),
                         {.method = FusionMethod::kLogSumExp, .weights = {0.5, 2.0, 1.5}},
                         {13, 1, 29});
  ExpectMatchesReference(MakeModels(2, 3), {.method = FusionMethod::kLogSumExp}, {kFrames});
}

TEST(ModelFusionTest, PosteriorMatchesReferenceWhateverTheChunking) {
  const std::vector<FloatMatrix> models = MakeModels(4, 4);
  for (const std::vector<int>& chunking : std::vector<std::vector<int>>{{1}, {10}, {3, 50, 7}}) {
    ExpectMatchesReference(models,
                           {.method = FusionMethod::kPosterior,
                            .weights = {1, 2, 3, 4},
                            .window_frames = 20,
                            .acoustic_scale = 0.1},
                           chunking);
  }
  ExpectMatchesReference(models, {.method = FusionMethod::kPosterior, .window_frames = 1}, {5});
  ExpectMatchesReference(models, {.method = FusionMethod::kPosterior, .acoustic_scale = 0.0},
                         {9});
}

TEST(ModelFusionTest, PosteriorWeightsFollowTheBetterModel) {
  // Model 1 is better by 5 nats on every state of every frame: its posterior
  // is ~1 per frame, so the window average moves to it and it dominates.
  std::vector<FloatMatrix> models = MakeModels(2, 5);
  for (int64_t t = 0; t < kFrames; ++t) {
    for (int64_t s = 0; s < kStates; ++s) models[1].at(t, s) = models[0].at(t, s) + 5.0f;
  }
  for (FusionMethod method :
       {FusionMethod::kMax, FusionMethod::kLogSumExp, FusionMethod::kPosterior}) {
    absl::StatusOr<ModelFusion> fusion = ModelFusion::Create(2, {.method = method});
    ASSERT_TRUE(fusion.ok());
    FusedScores fused;
    ASSERT_TRUE(fusion->Fuse({models[0].view(), models[1].view()}, &fused).ok());
    EXPECT_EQ(fused.dominant_model, 1) << FusionMethodName(method);
    EXPECT_FLOAT_EQ(fused.model_share[1], 1.0f);
    if (method == FusionMethod::kPosterior) {
      EXPECT_GT(fused.model_weights[(kFrames - 1) * 2 + 1], 0.99f);
    }
  }
}

TEST(ModelFusionTest, OneModelIsItsOwnFusion) {
  std::vector<FloatMatrix> models = MakeModels(1, 6);
  for (FusionMethod method :
       {FusionMethod::kMax, FusionMethod::kLogSumExp, FusionMethod::kPosterior}) {
    absl::StatusOr<ModelFusion> fusion = ModelFusion::Create(1, {.method = method});
    ASSERT_TRUE(fusion.ok());
    FusedScores fused;
    ASSERT_TRUE(fusion->Fuse({models[0].view()}, &fused).ok());
    for (int64_t i = 0; i < kFrames * kStates; ++i) {
      ASSERT_NEAR(fused.loglikes.data()[i], models[0].data()[i], 1e-5);
    }
    EXPECT_EQ(fused.dominant_model, 0);
  }
}

TEST(ModelFusionTest, RejectsBadOptions) {
  EXPECT_FALSE(ModelFusion::Create(0, {}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.weights = {1.0}}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.weights = {1.0, 0.0}}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.weights = {1.0, NAN}}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.window_frames = 0}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.window_frames = FusionOptions::kMaxWindowFrames + 1}).ok());
  EXPECT_FALSE(ModelFusion::Create(2, {.acoustic_scale = -1.0}).ok());
  absl::Status status = ModelFusion::Create(3, {.weights = {1.0, 2.0}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("2 weights for 3 models"), std::string::npos) << status;
}

TEST(ModelFusionTest, RejectsMismatchedInputs) {
  absl::StatusOr<ModelFusion> fusion = ModelFusion::Create(2, {});
  ASSERT_TRUE(fusion.ok());
  FloatMatrix a(3, 4), b(3, 5);
  FusedScores fused;
  EXPECT_EQ(fusion->Fuse({a.view()}, &fused).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fusion->Fuse({a.view(), b.view()}, &fused).code(),
            absl::StatusCode::kInvalidArgument);
}

// The two halves a backend uses (NextLogWeights, SetDominance) give the
// weights and dominance Fuse gives, chunk after chunk, from frame totals.
TEST(ModelFusionTest, HalvesFollowFuse) {
  const std::vector<FloatMatrix> models = MakeModels(3, 7);
  const FusionOptions options = {.method = FusionMethod::kPosterior, .window_frames = 11,
                                 .acoustic_scale = 0.2};
  absl::StatusOr<ModelFusion> whole = ModelFusion::Create(3, options);
  absl::StatusOr<ModelFusion> halves = ModelFusion::Create(3, options);
  ASSERT_TRUE(whole.ok() && halves.ok());
  for (int64_t first = 0; first < kFrames; first += 17) {
    const int64_t count = std::min<int64_t>(17, kFrames - first);
    std::vector<ConstMatrixView> views;
    for (const FloatMatrix& m : models) views.push_back(m.view().Rows(first, count));
    FusedScores expected, got;
    ASSERT_TRUE(whole->Fuse(views, &expected).ok());
    std::vector<double> totals(count * 3);
    for (int64_t t = 0; t < count; ++t) {
      for (int m = 0; m < 3; ++m) {
        double max = -INFINITY, sum = 0.0;
        for (int64_t s = 0; s < kStates; ++s) max = std::max<double>(max, views[m].at(t, s));
        for (int64_t s = 0; s < kStates; ++s) sum += std::exp(views[m].at(t, s) - max);
        totals[t * 3 + m] = max + std::log(sum);
      }
    }
    std::vector<double> log_weights;
    ASSERT_TRUE(halves->NextLogWeights(totals, count, &log_weights, &got).ok());
    ASSERT_EQ(log_weights.size(), static_cast<size_t>(count * 3));
    for (int64_t k = 0; k < count * 3; ++k) {
      EXPECT_NEAR(got.model_weights[k], expected.model_weights[k], 1e-6);
      EXPECT_NEAR(std::exp(log_weights[k]), expected.model_weights[k], 1e-6);
    }
  }
  // Winners 0, 2, 2: model 2 dominates two thirds of the frames.
  FusedScores summary;
  halves->SetDominance(std::vector<int>{0, 2, 2}, &summary);
  EXPECT_EQ(summary.dominant_model, 2);
  EXPECT_NEAR(summary.model_share[2], 2.0f / 3.0f, 1e-6);
  // Totals of the wrong shape, or none for a posterior fusion, are refused.
  std::vector<double> log_weights;
  EXPECT_EQ(halves->NextLogWeights(std::vector<double>(5), 2, &log_weights, &summary).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(halves->NextLogWeights({}, 2, &log_weights, &summary).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelFusionTest, MethodNamesRoundTrip) {
  for (FusionMethod method :
       {FusionMethod::kMax, FusionMethod::kLogSumExp, FusionMethod::kPosterior}) {
    EXPECT_EQ(*ParseFusionMethod(FusionMethodName(method)), method);
  }
  EXPECT_FALSE(ParseFusionMethod("mean").ok());
}

}  // namespace
}  // namespace gmmscore
