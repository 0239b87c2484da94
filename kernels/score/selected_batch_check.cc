#include "kernels/score/selected_batch_check.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/reference_scorer.h"
#include "kernels/score/state_selection.h"
#include "kernels/score/transformed_batch_check.h"  // PrepareSynthetic

namespace gmmscore {
namespace {

// A synthetic model with every state twice (states s and s + S identical):
// both score the same bits, so every top-k cut-off falls on a tie.
std::shared_ptr<const PreparedModel> PrepareTwinStates(ScoringBackend& backend, const SyntheticModelSpec& spec) {
  auto model = GenerateSyntheticModel(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  const absl::Span<const int64_t> offsets = model->state_offsets();
  const ConstMatrixView params = model->params();
  std::vector<int64_t> twin_offsets(offsets.begin(), offsets.end());
  for (size_t s = 1; s < offsets.size(); ++s) twin_offsets.push_back(offsets.back() + offsets[s]);
  std::vector<float> twin_params;
  for (int copy = 0; copy < 2; ++copy) {
    for (int64_t g = 0; g < params.rows; ++g) {
      twin_params.insert(twin_params.end(), params.row(g), params.row(g) + params.cols);
    }
  }
  auto twin = DiagGmmModel::FromScoringForm(
      model->dim(), std::move(twin_offsets),
      std::vector<float>(model->center().begin(), model->center().end()), std::move(twin_params));
  EXPECT_TRUE(twin.ok()) << twin.status();
  if (!twin.ok()) return nullptr;
  auto prepared = backend.Prepare(std::make_shared<const DiagGmmModel>(*std::move(twin)));
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return prepared.ok() ? *prepared : nullptr;
}

// A result filled with what a correct backend must overwrite.
ScoreResult Poisoned() {
  ScoreResult result;
  result.loglikes = FloatMatrix(3, 5, std::numeric_limits<float>::quiet_NaN());
  result.frame_totals.assign(4, std::numeric_limits<float>::quiet_NaN());
  result.sparse = SparseScores{.num_states = 99, .frame_offsets = {0, 1}, .state_ids = {98}, .values = {1.0f}};
  return result;
}

std::string Describe(const StateSelection& keep) {
  return "beam " + std::to_string(keep.beam) + ", top_k " + std::to_string(keep.top_k);
}

// A result for a window that asked for `keep`: dense and bitwise `twin`
// (left to the caller to select), or exactly SelectStates of `twin`; the
// latter required when `must_select`.
void ExpectSelectionOf(const ScoreResult& got, const ScoreResult& twin, const StateSelection& keep,
                       bool must_select) {
  if (!got.sparse.has_value()) {
    EXPECT_FALSE(must_select) << "came back dense";
    ASSERT_EQ(got.loglikes.rows(), twin.loglikes.rows());
    ASSERT_EQ(got.loglikes.cols(), twin.loglikes.cols());
    for (int64_t i = 0; i < twin.loglikes.rows() * twin.loglikes.cols(); ++i) {
      ASSERT_EQ(got.loglikes.data()[i], twin.loglikes.data()[i]) << "score " << i;
    }
    return;
  }
  EXPECT_EQ(got.loglikes.rows() * got.loglikes.cols(), 0) << "a selected window's matrix is freed";
  const SparseScores want = SelectStates(twin.loglikes.view(), keep);
  EXPECT_EQ(got.sparse->num_states, twin.loglikes.cols());
  EXPECT_EQ(got.sparse->frame_offsets, want.frame_offsets);
  EXPECT_EQ(got.sparse->state_ids, want.state_ids);
  ASSERT_EQ(got.sparse->values.size(), want.values.size());
  for (size_t i = 0; i < want.values.size(); ++i) {
    ASSERT_EQ(got.sparse->values[i], want.values[i]) << "kept value " << i;
  }
}

}  // namespace

void ExpectSelectedBatchMatchesHostSelection(ScoringBackend& backend, double bound, bool selects_top_k) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const std::vector<std::shared_ptr<const PreparedModel>> models = {
      PrepareSynthetic(backend, {.num_states = 5003, .min_gaussians = 1, .max_gaussians = 3, .dim = 13,
                                 .seed = seed}),
      PrepareSynthetic(backend, {.num_states = 131, .min_gaussians = 1, .max_gaussians = 9, .dim = 39,
                                 .seed = seed + 1}),
      PrepareTwinStates(backend, {.num_states = 61, .min_gaussians = 2, .max_gaussians = 5, .dim = 7,
                                  .seed = seed + 2})};
  for (const auto& model : models) ASSERT_NE(model, nullptr);

  struct Window {
    int model;
    int64_t frames;
    StateSelection keep;
  };
  // Chunk-sized windows (as a stream sends) and a longer one; per model the
  // awkward selections (one state, a few, more than there are, with a
  // beam) and dense windows between them.
  const std::vector<Window> asked = {
      {0, 10, {.top_k = 100}},          {0, 10, {.beam = 4.0f, .top_k = 100}}, {0, 7, {}},
      {0, 37, {.top_k = 1}},            {0, 0, {.top_k = 5}},                  {0, 3, {.beam = 2.0f}},
      {1, 10, {.top_k = 7}},            {1, 21, {.top_k = 500}},               {1, 4, {}},
      {1, 10, {.beam = 30.0f, .top_k = 131}}, {2, 17, {.top_k = 5}},           {2, 10, {.top_k = 1}},
      {2, 9, {.beam = 0.5f, .top_k = 40}},    {2, 12, {.top_k = 122}},         {2, 5, {}}};
  constexpr int kTwinStateWindow = 10;
  std::vector<FloatMatrix> features;
  for (size_t w = 0; w < asked.size(); ++w) {
    const DiagGmmModel& model = models[asked[w].model]->model();
    features.push_back(GenerateSyntheticFeatures(model, asked[w].frames, seed + 10 + w));
  }
  // Two calls over the same windows in the same order: the first with the
  // selections, the second all dense (the twins). A frame's scores depend
  // on where it lies in a packed run (CPU SIMD blocks), so the twins are
  // laid out exactly as the selected windows, and bitwise equal to them.
  std::vector<ScoreResult> results(asked.size(), Poisoned()), twins(asked.size(), Poisoned());
  std::vector<ScoreWindow> selected, dense;
  for (size_t w = 0; w < asked.size(); ++w) {
    const PreparedModel* model = models[asked[w].model].get();
    ScoreWindow window{model, features[w].view(), &results[w]};
    window.select = asked[w].keep;
    selected.push_back(window);
    dense.push_back({model, features[w].view(), &twins[w]});
  }
  ASSERT_TRUE(backend.ScoreBatch(selected, {}).ok());
  ASSERT_TRUE(backend.ScoreBatch(dense, {}).ok());

  for (size_t w = 0; w < asked.size(); ++w) {
    SCOPED_TRACE(testing::Message() << "window " << w << ": " << Describe(asked[w].keep) << ", "
                                    << asked[w].frames << " frames of model " << asked[w].model);
    const ScoreResult& got = results[w];
    const ScoreResult& twin = twins[w];
    const int states = models[asked[w].model]->num_states();
    EXPECT_FALSE(twin.sparse.has_value());
    ASSERT_EQ(twin.loglikes.rows(), asked[w].frames);
    ASSERT_EQ(twin.loglikes.cols(), states);
    EXPECT_LE(MaxNormalizedError(twin.loglikes,
                                 ReferenceLogLikelihoods(models[asked[w].model]->model(), features[w].view())),
              bound);
    ASSERT_EQ(got.frame_totals.size(), twin.frame_totals.size());
    for (size_t t = 0; t < twin.frame_totals.size(); ++t) EXPECT_EQ(got.frame_totals[t], twin.frame_totals[t]);
    if (asked[w].keep.dense()) EXPECT_FALSE(got.sparse.has_value());
    const bool must_select = selects_top_k && asked[w].keep.top_k > 0 && asked[w].keep.top_k < states;
    // What the backend says it returns (the daemon charges a chunk's answer
    // by it) is what it returned.
    EXPECT_EQ(backend.ReturnsSelected(*models[asked[w].model], asked[w].keep), got.sparse.has_value());
    ExpectSelectionOf(got, twin, asked[w].keep, must_select);
  }
  // The twin-state model really gives ties: some state s and s + 61 score
  // the same bits.
  const FloatMatrix& tied = twins[kTwinStateWindow].loglikes;
  int ties = 0;
  for (int64_t t = 0; t < tied.rows(); ++t) {
    for (int s = 0; s < 61; ++s) ties += tied.at(t, s) == tied.at(t, s + 61);
  }
  EXPECT_GT(ties, 0);

  // Selected windows and a fusion in one ScoreFusedBatch call (on CUDA the
  // selection is queued before the copies back and finished before the
  // fusion runs), against the same call with nothing selected: the same
  // kept states as SelectStates of the twin, the same fused scores.
  {
    SCOPED_TRACE("selections beside a posterior fusion");
    const PreparedModel* states131 = models[1].get();
    const FloatMatrix& chunk = features[6];
    struct Call {
      std::vector<ScoreResult> results = std::vector<ScoreResult>(4, Poisoned());
      FusedScores fused;
      std::optional<ModelFusion> state;
    };
    Call with, without;
    for (Call* call : {&with, &without}) {
      auto state = ModelFusion::Create(2, {.method = FusionMethod::kPosterior});
      ASSERT_TRUE(state.ok()) << state.status();
      call->state.emplace(*std::move(state));
      std::vector<ScoreWindow> windows;
      for (int w = 0; w < 4; ++w) windows.push_back({states131, chunk.view(), &call->results[w]});
      if (call == &with) {
        windows[0].select = {.top_k = 9};
        windows[3].select = {.beam = 1.5f, .top_k = 20};
      }
      const std::vector<FusionJob> fusions = {{.windows = {1, 2}, .fusion = &*call->state, .out = &call->fused}};
      ASSERT_TRUE(backend.ScoreFusedBatch(windows, fusions, {}).ok());
    }
    for (int w : {0, 3}) {
      SCOPED_TRACE(testing::Message() << "window " << w);
      ExpectSelectionOf(with.results[w], without.results[w],
                        w == 0 ? StateSelection{.top_k = 9} : StateSelection{.beam = 1.5f, .top_k = 20},
                        selects_top_k);
    }
    ASSERT_EQ(with.fused.loglikes.rows(), chunk.rows());
    ASSERT_EQ(without.fused.loglikes.rows(), chunk.rows());
    for (int64_t i = 0; i < chunk.rows() * states131->num_states(); ++i) {
      ASSERT_EQ(with.fused.loglikes.data()[i], without.fused.loglikes.data()[i]) << "fused score " << i;
    }
    EXPECT_EQ(with.fused.model_weights, without.fused.model_weights);
  }

  // Fusion needs every state of its windows.
  auto fusion = ModelFusion::Create(2, {});
  ASSERT_TRUE(fusion.ok()) << fusion.status();
  ScoreResult a, b;
  FusedScores fused;
  ScoreWindow first{models[1].get(), features[6].view(), &a};
  first.select = {.top_k = 3};
  const std::vector<ScoreWindow> pair = {first, {models[1].get(), features[6].view(), &b}};
  const std::vector<FusionJob> fusions = {{.windows = {0, 1}, .fusion = &*fusion, .out = &fused}};
  const absl::Status status = backend.ScoreFusedBatch(pair, fusions, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

}  // namespace gmmscore
