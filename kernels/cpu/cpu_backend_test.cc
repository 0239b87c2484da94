#include "kernels/cpu/cpu_backend.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/fused_batch_check.h"
#include "kernels/score/selected_batch_check.h"
#include "kernels/score/reference_scorer.h"
#include "kernels/score/transformed_batch_check.h"

namespace gmmscore {
namespace {

// The float32 error model the tests hold the backend to.
//
// A float32 GEMM cannot hold every log-likelihood to 1e-4 nats on MFCC-scale
// data: SGEMM sums the 1 + 2D terms K, u_d y_d, v_d y_d^2 of a Gaussian in float, so its
// rounding error grows with the terms, not with the result. Outlier frames
// give sum |terms| in the thousands, both where u.y and v.y^2 cancel to a
// result near -40 and for far-off states (results down to -4000, where one
// float ulp alone is 2.4e-4). Measured errors stay below ~9 u sum|terms|
// (u = 2^-24), as expected of a float sum of 73 terms (~sqrt(n) u), so
// kTermUlps = 32 leaves ~4x headroom. An element passes when
//   |error| <= kAbsTolerance + kTermUlps * u * max_g sum|terms_g|,
// the max over the state's Gaussians. Frame totals get the softmax-weighted
// average of their states' allowances.
constexpr double kAbsTolerance = 1e-4;  // nats
constexpr double kTermUlps = 32.0;
constexpr double kUnitRoundoff = 0x1p-24;

// T x S: largest sum |K| + sum_d |u_d y_d| + |v_d y_d^2| over each state's
// Gaussians, in float64.
std::vector<double> TermMagnitudes(const DiagGmmModel& model, ConstMatrixView features) {
  const int num_states = model.num_states();
  std::vector<double> out(features.rows * num_states);
  std::vector<double> y(model.dim());
  for (int64_t t = 0; t < features.rows; ++t) {
    for (int d = 0; d < model.dim(); ++d) y[d] = double{features.at(t, d)} - model.center()[d];
    for (int s = 0; s < num_states; ++s) {
      double largest = 0.0;
      for (int64_t g = model.state_offsets()[s]; g < model.state_offsets()[s + 1]; ++g) {
        double sum = std::abs(model.gconst(g));
        for (int d = 0; d < model.dim(); ++d) {
          sum += std::abs(model.means_invvars(g)[d] * y[d]) +
                 std::abs(model.half_neg_inv_vars(g)[d] * y[d] * y[d]);
        }
        largest = std::max(largest, sum);
      }
      out[t * num_states + s] = largest;
    }
  }
  return out;
}

// What one comparison against the reference found.
struct Comparison {
  double max_abs_error = 0.0;
  double max_normalized = 0.0;   // max |error| / max(1, |reference| / 256)
  double max_term_ulps = 0.0;    // max |error| / (u sum|terms|)
  double max_total_error = 0.0;  // frame totals
  int64_t over_1e4 = 0;          // elements with |error| > 1e-4
  int64_t over_allowance = 0;    // elements (or totals) failing the model
};

// Compares loglikes (and frame totals, when present) with the float64
// reference under the error model above.
Comparison CompareWithReference(const DiagGmmModel& model, ConstMatrixView features,
                                const ScoreResult& result) {
  const int num_states = model.num_states();
  const std::vector<double> reference = ReferenceLogLikelihoods(model, features);
  const std::vector<double> magnitude = TermMagnitudes(model, features);
  Comparison c;
  for (int64_t t = 0; t < features.rows; ++t) {
    const double* ref = reference.data() + t * num_states;
    const double* mag = magnitude.data() + t * num_states;
    const double max = *std::max_element(ref, ref + num_states);
    double sum = 0.0, weighted_allowance = 0.0;
    for (int s = 0; s < num_states; ++s) {
      double error = std::abs(result.loglikes.at(t, s) - ref[s]);
      if (std::isnan(error)) error = INFINITY;
      const double allowance = kAbsTolerance + kTermUlps * kUnitRoundoff * mag[s];
      c.max_abs_error = std::max(c.max_abs_error, error);
      c.max_normalized =
          std::max(c.max_normalized, error / std::max(1.0, std::abs(ref[s]) / 256.0));
      c.max_term_ulps = std::max(c.max_term_ulps, error / (kUnitRoundoff * mag[s]));
      c.over_1e4 += error > 1e-4;
      c.over_allowance += !(error <= allowance);
      const double weight = std::exp(ref[s] - max);
      sum += weight;
      weighted_allowance += weight * allowance;
    }
    if (result.frame_totals.empty()) continue;
    double error = std::abs(result.frame_totals[t] - (max + std::log(sum)));
    if (std::isnan(error)) error = INFINITY;
    c.max_total_error = std::max(c.max_total_error, error);
    c.over_allowance += !(error <= weighted_allowance / sum);
  }
  return c;
}

std::shared_ptr<const DiagGmmModel> MakeModel(const SyntheticModelSpec& spec) {
  auto model = GenerateSyntheticModel(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::make_shared<const DiagGmmModel>(*std::move(model));
}

// Scores into a NaN-filled result, so an element the backend forgets shows.
ScoreResult PoisonedScore(ScoringBackend& backend, const PreparedModel& prepared,
                          ConstMatrixView features, ScoreOptions options = {}) {
  ScoreResult result;
  result.loglikes = FloatMatrix(features.rows, prepared.model().num_states(), NAN);
  result.frame_totals.assign(features.rows, NAN);
  const absl::Status status = backend.Score(prepared, features, options, &result);
  EXPECT_TRUE(status.ok()) << status;
  return result;
}

struct Shape {
  int num_states;
  int min_gaussians;
  int max_gaussians;
  int dim;
  uint64_t seed;
};

std::string ShapeName(const Shape& shape) {
  return absl::StrFormat("D%d_S%d_G%d_%d_seed%d", shape.dim, shape.num_states, shape.min_gaussians,
                         shape.max_gaussians, shape.seed);
}

class CpuBackendShapeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuBackendShapeTest, MatchesFloat64ReferenceForEveryFrameCount) {
  const Shape& shape = GetParam();
  const auto model = MakeModel({.num_states = shape.num_states,
                                .min_gaussians = shape.min_gaussians,
                                .max_gaussians = shape.max_gaussians,
                                .dim = shape.dim,
                                .seed = shape.seed});
  std::unique_ptr<ScoringBackend> backend = CreateCpuBackend();
  auto prepared = backend->Prepare(model);
  ASSERT_TRUE(prepared.ok()) << prepared.status();

  for (int64_t frames : {0, 1, 7, 8, 9, 16, 100, 1000}) {
    const FloatMatrix features = GenerateSyntheticFeatures(*model, frames, shape.seed + frames);
    const ScoreResult result = PoisonedScore(*backend, **prepared, features.view());
    ASSERT_EQ(result.loglikes.rows(), frames);
    ASSERT_EQ(result.loglikes.cols(), model->num_states());
    ASSERT_EQ(static_cast<int64_t>(result.frame_totals.size()), frames);

    const Comparison c = CompareWithReference(*model, features.view(), result);
    std::printf(
        "%-24s T=%-4lld max abs err %.2e (%5lld of %6lld > 1e-4), normalized %.2e, "
        "err/(u sum|terms|) %4.1f; totals %.2e\n",
        ShapeName(shape).c_str(), static_cast<long long>(frames), c.max_abs_error,
        static_cast<long long>(c.over_1e4), static_cast<long long>(frames * model->num_states()),
        c.max_normalized, c.max_term_ulps, c.max_total_error);
    EXPECT_EQ(c.over_allowance, 0) << "T = " << frames;
  }
}

INSTANTIATE_TEST_SUITE_P(AwkwardShapes, CpuBackendShapeTest,
                         ::testing::Values(Shape{1, 1, 1, 13, 1},      // one Gaussian everywhere
                                           Shape{65, 1, 1, 36, 2},     // one Gaussian, S past 64
                                           Shape{63, 1, 256, 13, 3},   // every G mixed in one model
                                           Shape{130, 1, 256, 39, 4},  //
                                           Shape{1, 256, 256, 40, 5},  // one big state
                                           Shape{65, 16, 16, 36, 6},   //
                                           Shape{130, 1, 40, 40, 7},   //
                                           Shape{400, 16, 16, 36, 8}),  // many chunks
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return ShapeName(info.param);
                         });

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = MakeModel(
        {.num_states = 50, .min_gaussians = 1, .max_gaussians = 20, .dim = 39, .seed = 11});
    auto prepared = backend_->Prepare(model_);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    prepared_ = *std::move(prepared);
  }

  std::unique_ptr<ScoringBackend> backend_ = CreateCpuBackend();
  std::shared_ptr<const DiagGmmModel> model_;
  std::shared_ptr<const PreparedModel> prepared_;
};

TEST_F(CpuBackendTest, BatchWithSpeakerTransformsMatchesFloat64Reference) {
  ExpectTransformedBatchMatchesReference(*backend_, {}, 2e-4);
}

// The base ScoreFusedBatch: scores, then ModelFusion::Fuse on the host.
TEST_F(CpuBackendTest, FusedBatchMatchesFloat64Reference) {
  ExpectFusedBatchMatchesReference(*backend_, 2e-4);
}

// The base ScoreBatch leaves the selection to its caller: dense results.
TEST_F(CpuBackendTest, SelectedWindowsComeBackDense) {
  ExpectSelectedBatchMatchesHostSelection(*backend_, 2e-4, /*selects_top_k=*/false);
}

TEST_F(CpuBackendTest, NameAndDeviceBytes) {
  EXPECT_EQ(backend_->name(), "cpu");
  EXPECT_EQ(prepared_->device_bytes(), 0);
  EXPECT_EQ(&prepared_->model(), model_.get());
}

TEST_F(CpuBackendTest, RejectsWrongDimension) {
  const FloatMatrix features(4, 38);
  ScoreResult result;
  EXPECT_EQ(backend_->Score(*prepared_, features.view(), {}, &result).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, RejectsNonFiniteFeatures) {
  FloatMatrix features = GenerateSyntheticFeatures(*model_, 5, 1);
  features.at(3, 10) = NAN;
  ScoreResult result;
  const absl::Status status = backend_->Score(*prepared_, features.view(), {}, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("frame 3, dimension 10"), std::string::npos) << status;
  features.at(3, 10) = -INFINITY;
  EXPECT_EQ(backend_->Score(*prepared_, features.view(), {}, &result).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, RejectsNullModelAndForeignPreparation) {
  EXPECT_EQ(backend_->Prepare(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  struct ForeignPrepared : PreparedModel {
    explicit ForeignPrepared(std::shared_ptr<const DiagGmmModel> model)
        : PreparedModel(std::move(model)) {}
    int64_t device_bytes() const override { return 0; }
  };
  const ForeignPrepared foreign(model_);
  const FloatMatrix features = GenerateSyntheticFeatures(*model_, 2, 1);
  ScoreResult result;
  EXPECT_EQ(backend_->Score(foreign, features.view(), {}, &result).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, FrameTotalsOnlyWhenAsked) {
  const FloatMatrix features = GenerateSyntheticFeatures(*model_, 9, 2);
  const ScoreResult with = PoisonedScore(*backend_, *prepared_, features.view());
  const ScoreResult without =
      PoisonedScore(*backend_, *prepared_, features.view(), {.frame_totals = false});
  EXPECT_EQ(with.frame_totals.size(), 9u);
  EXPECT_TRUE(without.frame_totals.empty());
  EXPECT_EQ(with.loglikes, without.loglikes);
}

TEST_F(CpuBackendTest, ReadsStridedFeatureViews) {
  const FloatMatrix dense = GenerateSyntheticFeatures(*model_, 20, 3);
  FloatMatrix padded(20, 45, NAN);
  for (int64_t t = 0; t < 20; ++t) std::copy_n(dense.row(t), 39, padded.row(t));
  const ConstMatrixView view(padded.data(), 20, 39, 45);
  EXPECT_EQ(PoisonedScore(*backend_, *prepared_, view).loglikes,
            PoisonedScore(*backend_, *prepared_, dense.view()).loglikes);
}

TEST_F(CpuBackendTest, ThreadCountDoesNotChangeResultsBeyondRounding) {
  const FloatMatrix features = GenerateSyntheticFeatures(*model_, 300, 4);
  for (int threads : {1, 3, 8}) {
    std::unique_ptr<ScoringBackend> backend = CreateCpuBackend({.num_threads = threads});
    auto prepared = backend->Prepare(model_);
    ASSERT_TRUE(prepared.ok());
    const ScoreResult result = PoisonedScore(*backend, **prepared, features.view());
    EXPECT_EQ(CompareWithReference(*model_, features.view(), result).over_allowance, 0)
        << threads << " threads";
  }
}

TEST_F(CpuBackendTest, ConcurrentCallsGiveIdenticalResults) {
  const FloatMatrix features = GenerateSyntheticFeatures(*model_, 150, 5);
  const ScoreResult expected = PoisonedScore(*backend_, *prepared_, features.view());
  constexpr int kCallers = 4;
  constexpr int kCallsEach = 25;
  std::vector<int> mismatches(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < kCallsEach; ++i) {
        const ScoreResult result = PoisonedScore(*backend_, *prepared_, features.view());
        if (!(result.loglikes == expected.loglikes) ||
            result.frame_totals != expected.frame_totals) {
          ++mismatches[c];
        }
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(mismatches[c], 0) << "caller " << c;
}

// A backend that encodes halves where a window asks (as the CUDA backend
// does) over the CPU backend's scores, and fuses the base class's way (on
// the host after ScoreBatch, as the CUDA backend does for tied models).
class HalvingBackend : public ScoringBackend {
 public:
  std::string name() const override { return "halving"; }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(std::shared_ptr<const DiagGmmModel> model) override {
    return cpu_->Prepare(std::move(model));
  }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> PrepareTied(
      std::shared_ptr<const TiedMixtureModel> model) override {
    return cpu_->PrepareTied(std::move(model));
  }
  absl::Status Score(const PreparedModel& model, ConstMatrixView features, const ScoreOptions& options,
                     ScoreResult* result) override {
    return cpu_->Score(model, features, options, result);
  }
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    if (absl::Status status = cpu_->ScoreBatch(jobs, options); !status.ok()) return status;
    for (const ScoreWindow& job : jobs) {
      if (!job.half_from_best) continue;
      const int64_t rows = job.result->loglikes.rows(), states = job.result->loglikes.cols();
      job.result->half = HalfScores{.num_states = states,
                                    .values = std::vector<uint16_t>(rows * states),
                                    .frame_best = std::vector<float>(rows)};
      job.result->loglikes = FloatMatrix();
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<ScoringBackend> cpu_ = CreateCpuBackend({.num_threads = 1});
};

// ScoringBackend::ScoreFusedBatch fuses from float32 scores: it never asks
// its ScoreBatch to halve a fused window, whatever the window says; other
// windows of the call keep their request.
TEST(FusedBatchTest, HostFusionNeverHalvesItsWindows) {
  HalvingBackend backend;
  std::vector<std::shared_ptr<const PreparedModel>> models;
  for (uint64_t seed : {31, 32}) {
    auto model = GenerateSyntheticModel({.num_states = 20, .min_gaussians = 1, .max_gaussians = 4, .dim = 5,
                                         .seed = seed});
    ASSERT_TRUE(model.ok());
    auto prepared = backend.Prepare(std::make_shared<const DiagGmmModel>(*std::move(model)));
    ASSERT_TRUE(prepared.ok());
    models.push_back(*std::move(prepared));
  }
  const FloatMatrix features = GenerateSyntheticFeatures(models[0]->model(), 12, 33);
  std::vector<FusedScores> fused(2);
  for (bool half : {false, true}) {
    std::vector<ScoreResult> results(3);
    std::vector<ScoreWindow> jobs;
    for (int w = 0; w < 3; ++w) {
      jobs.push_back({.model = models[w % 2].get(), .features = features.view(), .result = &results[w],
                      .half_from_best = half});
    }
    auto fusion = ModelFusion::Create(2, {});
    ASSERT_TRUE(fusion.ok());
    const std::vector<FusionJob> fusions = {{.windows = {0, 1}, .fusion = &*fusion, .out = &fused[half]}};
    ASSERT_TRUE(backend.ScoreFusedBatch(jobs, fusions, {}).ok()) << "half_from_best " << half;
    EXPECT_FALSE(results[0].half.has_value());
    EXPECT_FALSE(results[1].half.has_value());
    EXPECT_EQ(results[0].loglikes.rows(), 12);
    EXPECT_EQ(results[2].half.has_value(), half) << "the window outside the fusion";
  }
  EXPECT_TRUE(fused[1].loglikes == fused[0].loglikes);
}

}  // namespace
}  // namespace gmmscore
