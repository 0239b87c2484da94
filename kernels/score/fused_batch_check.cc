#include "kernels/score/fused_batch_check.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/fusion_reference.h"
#include "kernels/score/reference_scorer.h"
#include "kernels/score/transformed_batch_check.h"  // PrepareSynthetic

namespace gmmscore {
namespace {

// Awkward on purpose: states not a multiple of any block, dim not of 4,
// uneven Gaussian counts with single-Gaussian states among them.
constexpr int kStates = 131;
constexpr int kDim = 13;
constexpr int kFusedModels = 3;

// One stream fused chunk after chunk, and what the float64 reference says
// about the whole of it.
struct Stream {
  std::string name;
  FloatMatrix features;
  bool model_scores = true;
  bool frame_totals = false;
  std::vector<std::vector<double>> reference;  // per model, T x S
  FusionReference fused;
  std::optional<ModelFusion> fusion;
  int64_t next = 0;  // first frame of the next chunk
};

FloatMatrix RowsOf(const FloatMatrix& matrix, int64_t first, int64_t count) {
  FloatMatrix out(count, matrix.cols());
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t c = 0; c < matrix.cols(); ++c) out.at(t, c) = matrix.at(first + t, c);
  }
  return out;
}

std::vector<double> RowsOf(const std::vector<double>& values, int64_t cols, int64_t first, int64_t count) {
  return std::vector<double>(values.begin() + first * cols, values.begin() + (first + count) * cols);
}

double LogSumExp(const double* row, int64_t count) {
  double max = -INFINITY;
  for (int64_t i = 0; i < count; ++i) max = std::max(max, row[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += std::exp(row[i] - max);
  return max + std::log(sum);
}

void CheckMethod(ScoringBackend& backend, const std::vector<std::shared_ptr<const PreparedModel>>& fused_models,
                 const PreparedModel& other, const FusionOptions& options, double bound) {
  SCOPED_TRACE(std::string("fusion ") + std::string(FusionMethodName(options.method)));
  std::vector<Stream> streams(2);
  streams[0].name = "A";
  streams[0].features = GenerateSyntheticFeatures(fused_models[0]->model(), 61, 500);
  streams[0].model_scores = true;
  streams[0].frame_totals = true;
  streams[1].name = "B";
  streams[1].features = GenerateSyntheticFeatures(fused_models[2]->model(), 45, 501);
  streams[1].model_scores = false;
  for (Stream& stream : streams) {
    for (const auto& model : fused_models) {
      stream.reference.push_back(ReferenceLogLikelihoods(model->model(), stream.features.view()));
    }
    stream.fused = ReferenceFuse(stream.reference, stream.features.rows(), kStates, options);
    auto fusion = ModelFusion::Create(kFusedModels, options);
    ASSERT_TRUE(fusion.ok()) << fusion.status();
    stream.fusion.emplace(*std::move(fusion));
  }

  const std::vector<int64_t> chunk_sizes = {1, 9, 17, 4, 30};
  for (size_t call = 0;; ++call) {
    std::vector<Stream*> live;
    std::vector<int64_t> counts;
    std::vector<FloatMatrix> chunks;
    for (Stream& stream : streams) {
      const int64_t left = stream.features.rows() - stream.next;
      if (left == 0) continue;
      live.push_back(&stream);
      counts.push_back(std::min(left, chunk_sizes[call % chunk_sizes.size()]));
    }
    if (live.empty()) break;
    for (size_t i = 0; i < live.size(); ++i) chunks.push_back(RowsOf(live[i]->features, live[i]->next, counts[i]));

    // Windows in runs by model, as the scheduler lays them out, then a
    // plain window of another model over stream A's chunk.
    const size_t plain_results = 1;
    std::vector<ScoreResult> results(kFusedModels * live.size() + plain_results);
    std::vector<ScoreWindow> windows;
    std::vector<FusionJob> fusions(live.size());
    std::vector<FusedScores> outs(live.size());
    for (int m = 0; m < kFusedModels; ++m) {
      for (size_t i = 0; i < live.size(); ++i) {
        ScoreResult& result = results[windows.size()];
        result.loglikes = FloatMatrix(counts[i], kStates, NAN);
        fusions[i].windows.push_back(static_cast<int>(windows.size()));
        windows.push_back({fused_models[m].get(), chunks[i].view(), &result});
      }
    }
    ScoreResult& plain = results[windows.size()];
    plain.loglikes = FloatMatrix(counts[0], other.num_states(), NAN);
    windows.push_back({&other, chunks[0].view(), &plain});
    for (size_t i = 0; i < live.size(); ++i) {
      outs[i].loglikes = FloatMatrix(counts[i], kStates, NAN);
      outs[i].frame_totals.assign(counts[i], NAN);
      fusions[i].fusion = &*live[i]->fusion;
      fusions[i].out = &outs[i];
      fusions[i].model_scores = live[i]->model_scores;
      fusions[i].frame_totals = live[i]->frame_totals;
    }
    const absl::Status status = backend.ScoreFusedBatch(windows, fusions, ScoreOptions{});
    ASSERT_TRUE(status.ok()) << backend.name() << ": " << status;

    EXPECT_LE(MaxNormalizedError(plain.loglikes, ReferenceLogLikelihoods(other.model(), chunks[0].view())), bound)
        << "plain window of call " << call;
    for (size_t i = 0; i < live.size(); ++i) {
      Stream& stream = *live[i];
      const int64_t first = stream.next, count = counts[i];
      SCOPED_TRACE(testing::Message() << "stream " << stream.name << " frames [" << first << ", "
                                      << first + count << ")");
      const FusedScores& out = outs[i];
      ASSERT_EQ(out.loglikes.rows(), count);
      ASSERT_EQ(out.loglikes.cols(), kStates);
      EXPECT_LE(MaxNormalizedError(out.loglikes, RowsOf(stream.fused.fused, kStates, first, count)), 4 * bound);
      if (options.method == FusionMethod::kMax) {
        EXPECT_TRUE(out.model_weights.empty());
      } else {
        ASSERT_EQ(out.model_weights.size(), static_cast<size_t>(count * kFusedModels));
        for (int64_t k = 0; k < count * kFusedModels; ++k) {
          EXPECT_NEAR(out.model_weights[k], stream.fused.weights[first * kFusedModels + k], 1e-3) << "weight " << k;
        }
      }
      std::vector<int> dominated(kFusedModels, 0);
      for (int64_t t = 0; t < count; ++t) ++dominated[stream.fused.dominant_per_frame[first + t]];
      ASSERT_EQ(out.model_share.size(), static_cast<size_t>(kFusedModels));
      for (int m = 0; m < kFusedModels; ++m) {
        EXPECT_NEAR(out.model_share[m], static_cast<float>(dominated[m]) / count, 1e-6) << "model " << m;
      }
      if (stream.frame_totals) {
        ASSERT_EQ(out.frame_totals.size(), static_cast<size_t>(count));
        FloatMatrix totals(count, 1);
        std::vector<double> expected(count);
        for (int64_t t = 0; t < count; ++t) {
          totals.at(t, 0) = out.frame_totals[t];
          expected[t] = LogSumExp(&stream.fused.fused[(first + t) * kStates], kStates);
        }
        EXPECT_LE(MaxNormalizedError(totals, expected), 4 * bound);
      } else {
        EXPECT_TRUE(out.frame_totals.empty());
      }
      for (int m = 0; m < kFusedModels; ++m) {
        const ScoreResult& result = results[m * live.size() + i];
        if (stream.model_scores) {
          EXPECT_LE(MaxNormalizedError(result.loglikes, RowsOf(stream.reference[m], kStates, first, count)), bound)
              << "model " << m;
        } else {
          EXPECT_EQ(result.loglikes.rows(), 0) << "model " << m << " scores were not asked for";
        }
      }
      stream.next += count;
    }
  }
}

}  // namespace

void ExpectFusedBatchMatchesReference(ScoringBackend& backend, double bound) {
  std::vector<std::shared_ptr<const PreparedModel>> fused_models;
  for (int m = 0; m < kFusedModels; ++m) {
    fused_models.push_back(PrepareSynthetic(
        backend, {.num_states = kStates, .min_gaussians = 1, .max_gaussians = 9, .dim = kDim,
                  .seed = static_cast<uint64_t>(41 + m)}));
    ASSERT_NE(fused_models.back(), nullptr);
  }
  const auto other = PrepareSynthetic(backend, {.num_states = 50, .min_gaussians = 1, .max_gaussians = 4,
                                                .dim = kDim, .seed = 44});
  ASSERT_NE(other, nullptr);

  CheckMethod(backend, fused_models, *other, {.method = FusionMethod::kMax}, bound);
  CheckMethod(backend, fused_models, *other, {.method = FusionMethod::kLogSumExp, .weights = {1, 2, 3}}, bound);
  // A small scale and a short window keep the posterior weights away from 0
  // and 1, so that they are checked for more than their rounding.
  CheckMethod(backend, fused_models, *other,
              {.method = FusionMethod::kPosterior, .weights = {3, 1, 1}, .window_frames = 7, .acoustic_scale = 0.02},
              bound);

  // Malformed fusions.
  auto fusion = ModelFusion::Create(2, {});
  ASSERT_TRUE(fusion.ok());
  const FloatMatrix frames = GenerateSyntheticFeatures(fused_models[0]->model(), 5, 7);
  const FloatMatrix shorter = GenerateSyntheticFeatures(fused_models[0]->model(), 4, 8);
  std::vector<ScoreResult> results(3);
  FusedScores out;
  const std::vector<ScoreWindow> windows = {{fused_models[0].get(), frames.view(), &results[0]},
                                            {fused_models[1].get(), frames.view(), &results[1]},
                                            {fused_models[2].get(), shorter.view(), &results[2]}};
  const std::vector<std::vector<FusionJob>> bad = {
      {{.windows = {0}, .fusion = &*fusion, .out = &out}},                                  // 1 window, 2 models
      {{.windows = {0, 1}, .fusion = &*fusion, .out = &out}, {.windows = {1, 0}, .fusion = &*fusion, .out = &out}},
      {{.windows = {0, 2}, .fusion = &*fusion, .out = &out}},                               // 5 vs 4 frames
      {{.windows = {0, 3}, .fusion = &*fusion, .out = &out}},                               // no window 3
      {{.windows = {0, 1}, .fusion = nullptr, .out = &out}}};
  for (size_t b = 0; b < bad.size(); ++b) {
    const absl::Status status = backend.ScoreFusedBatch(windows, bad[b], ScoreOptions{});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << "malformed fusion " << b << ": " << status;
  }
}

}  // namespace gmmscore
