// The CPU backend on tied-mixture models (ScoringBackend::PrepareTied):
// random multi-stream models with uneven codebooks and starving states
// against the float64 reference, through Score and ScoreBatch (speaker
// transforms, windows of tied and untied models mixed), and its errors.
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tied_mixture_reference.h"
#include "kernels/cpu/tied_mixture_test_util.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

constexpr double kTiedBound = 2e-3;  // as tied_mixture_scorer_test

std::vector<double> ReferenceTotals(const std::vector<double>& ll, int64_t frames, int states) {
  std::vector<double> totals(frames);
  for (int64_t t = 0; t < frames; ++t) {
    double best = -INFINITY;
    for (int s = 0; s < states; ++s) best = std::max(best, ll[t * states + s]);
    double sum = 0.0;
    for (int s = 0; s < states; ++s) sum += std::exp(ll[t * states + s] - best);
    totals[t] = best + std::log(sum);
  }
  return totals;
}

FeatureTransform NearIdentity(int dim, uint32_t seed) {
  std::vector<float> values(dim * (dim + 1));
  for (int i = 0; i < dim; ++i) {
    for (int j = 0; j <= dim; ++j) {
      const float wobble = 0.01f * static_cast<float>((i * 7 + j * 3 + seed) % 5) - 0.02f;
      values[i * (dim + 1) + j] = j == dim ? 0.3f * wobble * 10 : (i == j ? 1.0f : 0.0f) + wobble;
    }
  }
  absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(dim, dim + 1, values);
  EXPECT_TRUE(transform.ok()) << transform.status();
  return *std::move(transform);
}

class CpuBackendTiedTest : public ::testing::Test {
 protected:
  std::unique_ptr<ScoringBackend> backend_ = CreateCpuBackend({.num_threads = 2});
};

TEST_F(CpuBackendTiedTest, MatchesFloat64ReferenceWithFrameTotals) {
  const RandomTiedSpec spec;
  const auto model = RandomTiedModel(spec);
  auto prepared = backend_->PrepareTied(model);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const PreparedModel& p = **prepared;
  EXPECT_TRUE(p.tied());
  EXPECT_EQ(p.dim(), 39);
  EXPECT_EQ(p.num_states(), model->num_states());
  EXPECT_EQ(p.gaussians_per_frame(), model->total_gaussians());
  EXPECT_EQ(p.host_bytes(), model->ByteSize());
  EXPECT_EQ(p.device_bytes(), 0);
  EXPECT_EQ(p.max_gaussians_per_state(), 64 * 3 + 3);

  const std::vector<int> starving = StarvingTiedStates(*model, spec);
  ASSERT_EQ(starving.size(), spec.states_per_codebook.size());
  for (int64_t frames : {1, 64, 65, 200}) {
    const FloatMatrix features = RandomTiedFeatures(frames, model->dim(), 100 + frames);
    ScoreResult result;
    ASSERT_TRUE(backend_->Score(p, features.view(), {}, &result).ok());
    ASSERT_EQ(result.loglikes.rows(), frames);
    ASSERT_EQ(result.loglikes.cols(), model->num_states());
    const std::vector<double> reference = TiedMixtureReferenceLogLikelihoods(*model, features.view());
    const double error = MaxTiedError(result.loglikes, reference);
    std::printf("cpu tied, %lld frames: max normalized error %.3g nats\n", static_cast<long long>(frames), error);
    EXPECT_LT(error, kTiedBound);
    // The starving states went through the exact recomputation: finite and right.
    for (int s : starving) {
      for (int64_t t = 0; t < frames; ++t) {
        ASSERT_TRUE(std::isfinite(result.loglikes.at(t, s))) << "state " << s << " frame " << t;
        EXPECT_NEAR(result.loglikes.at(t, s), reference[t * model->num_states() + s],
                    kTiedBound * std::max(1.0, std::abs(reference[t * model->num_states() + s]) / 256.0));
      }
    }
    const std::vector<double> totals = ReferenceTotals(reference, frames, model->num_states());
    ASSERT_EQ(result.frame_totals.size(), static_cast<size_t>(frames));
    for (int64_t t = 0; t < frames; ++t) {
      EXPECT_NEAR(result.frame_totals[t], totals[t], kTiedBound * std::max(1.0, std::abs(totals[t]) / 256.0));
    }
  }
  // No totals when not asked; zero frames give 0 x S.
  const FloatMatrix features = RandomTiedFeatures(5, model->dim(), 3);
  ScoreResult result;
  ASSERT_TRUE(backend_->Score(p, features.view(), {.frame_totals = false}, &result).ok());
  EXPECT_TRUE(result.frame_totals.empty());
  FloatMatrix none(0, model->dim());
  ASSERT_TRUE(backend_->Score(p, none.view(), {}, &result).ok());
  EXPECT_EQ(result.loglikes.rows(), 0);
  EXPECT_EQ(result.loglikes.cols(), model->num_states());
}

TEST_F(CpuBackendTiedTest, OtherShapes) {
  // Semi-continuous (one codebook, 4 uneven streams) and one stream.
  for (const RandomTiedSpec& spec :
       {RandomTiedSpec{.streams = {{0, 12}, {12, 24}, {36, 3}, {39, 12}}, .states_per_codebook = {40}, .sizes = {64}},
        RandomTiedSpec{.streams = {{0, 39}}, .states_per_codebook = {1, 1, 2, 30}, .sizes = {8, 16},
                       .weighted_streams = false, .seed = 5}}) {
    const auto model = RandomTiedModel(spec);
    auto prepared = backend_->PrepareTied(model);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    const FloatMatrix features = RandomTiedFeatures(70, model->dim(), 9);
    ScoreResult result;
    ASSERT_TRUE(backend_->Score(**prepared, features.view(), {}, &result).ok());
    EXPECT_LT(MaxTiedError(result.loglikes, TiedMixtureReferenceLogLikelihoods(*model, features.view())), kTiedBound);
  }
}

TEST_F(CpuBackendTiedTest, BatchWithTransformsAndUntiedModels) {
  const auto tied_a = RandomTiedModel({.seed = 21});
  const auto tied_b = RandomTiedModel({.streams = {{0, 20}, {20, 19}}, .states_per_codebook = {2, 18}, .seed = 22});
  auto untied = GenerateSyntheticModel({.num_states = 12, .dim = 39, .seed = 23});
  ASSERT_TRUE(untied.ok());
  const auto untied_model = std::make_shared<const DiagGmmModel>(*std::move(untied));
  auto a = backend_->PrepareTied(tied_a);
  auto b = backend_->PrepareTied(tied_b);
  auto u = backend_->Prepare(untied_model);
  ASSERT_TRUE(a.ok() && b.ok() && u.ok());
  const FeatureTransform transform = NearIdentity(39, 4);
  const std::vector<FloatMatrix> features = {RandomTiedFeatures(30, 39, 1), RandomTiedFeatures(11, 39, 2),
                                             RandomTiedFeatures(7, 39, 3), RandomTiedFeatures(25, 39, 4),
                                             RandomTiedFeatures(0, 39, 5)};
  std::vector<ScoreResult> results(features.size());
  const std::vector<ScoreWindow> windows = {
      {a->get(), features[0].view(), &results[0], &transform},
      {a->get(), features[1].view(), &results[1], nullptr},
      {u->get(), features[2].view(), &results[2], nullptr},
      {b->get(), features[3].view(), &results[3], &transform},
      {b->get(), features[4].view(), &results[4], nullptr}};
  ASSERT_TRUE(backend_->ScoreBatch(windows, {}).ok());
  FloatMatrix transformed;
  ASSERT_TRUE(transform.Apply(features[0].view(), &transformed).ok());
  EXPECT_LT(MaxTiedError(results[0].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_a, transformed.view())),
            kTiedBound);
  EXPECT_LT(MaxTiedError(results[1].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_a, features[1].view())),
            kTiedBound);
  EXPECT_LT(MaxNormalizedError(results[2].loglikes, ReferenceLogLikelihoods(*untied_model, features[2].view())), 1e-3);
  ASSERT_TRUE(transform.Apply(features[3].view(), &transformed).ok());
  EXPECT_LT(MaxTiedError(results[3].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_b, transformed.view())),
            kTiedBound);
  EXPECT_EQ(results[4].loglikes.rows(), 0);
  EXPECT_EQ(results[4].loglikes.cols(), tied_b->num_states());
  for (int w = 0; w < 4; ++w) EXPECT_EQ(results[w].frame_totals.size(), static_cast<size_t>(features[w].rows()));
}

TEST_F(CpuBackendTiedTest, Errors) {
  EXPECT_EQ(backend_->PrepareTied(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  const auto model = RandomTiedModel({});
  auto prepared = backend_->PrepareTied(model);
  ASSERT_TRUE(prepared.ok());
  ScoreResult result;
  FloatMatrix narrow(3, 13, 1.0f);
  EXPECT_EQ(backend_->Score(**prepared, narrow.view(), {}, &result).code(), absl::StatusCode::kInvalidArgument);
  FloatMatrix features = RandomTiedFeatures(4, 39, 1);
  features.at(2, 20) = NAN;
  absl::Status status = backend_->Score(**prepared, features.view(), {}, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("frame 2, dimension 20"), absl::string_view::npos) << status;
  EXPECT_EQ(ValidateFeatures(*model, narrow.view()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
