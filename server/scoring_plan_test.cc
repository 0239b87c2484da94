#include "server/scoring_plan.h"

#include <cmath>
#include <memory>
#include <random>

#include "gtest/gtest.h"
#include "kernels/core/feature_values.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/state_selection.h"

namespace gmmscore {
namespace {

class ScoringPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models;
    auto add = [&](const std::string& name, int states, int dim, uint64_t seed) {
      auto model = GenerateSyntheticModel({.num_states = states, .min_gaussians = 1,
                                           .max_gaussians = 2, .dim = dim, .seed = seed});
      ASSERT_TRUE(model.ok());
      models.emplace_back(name, std::make_shared<const DiagGmmModel>(*std::move(model)));
    };
    add("a", 4, 3, 1);
    add("b", 4, 3, 2);
    add("c", 5, 3, 3);
    add("d", 4, 2, 4);
    auto repo = ModelRepository::FromModels(std::move(models), backend_.get());
    ASSERT_TRUE(repo.ok());
    repo_ = *std::move(repo);
  }

  absl::Status Plan(const v1::StreamConfig& config) {
    return PlanForStream(config, *repo_).status();
  }

  std::unique_ptr<ScoringBackend> backend_ = CreateCpuBackend({.num_threads = 1});
  std::unique_ptr<ModelRepository> repo_;
};

v1::StreamConfig Config(std::initializer_list<const char*> models) {
  v1::StreamConfig config;
  for (const char* m : models) config.add_models(m);
  return config;
}

void ExpectError(const absl::Status& status, absl::StatusCode code, const std::string& text) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find(text), std::string::npos) << status;
}

TEST_F(ScoringPlanTest, SparseOutputOptions) {
  v1::StreamConfig config = Config({"c"});
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->sparse.dense());
  config.mutable_output()->set_beam(7.5f);
  config.mutable_output()->set_top_k(100);  // more than the 5 states: all of them
  plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->sparse.beam, 7.5f);
  EXPECT_EQ(plan->sparse.top_k, 5);
  for (float bad : {-1.0f, NAN, INFINITY}) {
    config.mutable_output()->set_beam(bad);
    ExpectError(Plan(config), absl::StatusCode::kInvalidArgument, "output.beam");
  }
}

TEST_F(ScoringPlanTest, ResolvesModelsAndDefaults) {
  v1::StreamConfig config = Config({"b", "a"});
  config.mutable_fusion()->set_method(v1::FUSION_METHOD_POSTERIOR);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->models[0]->name, "b");
  EXPECT_EQ(plan->dim, 3);
  EXPECT_EQ(plan->num_states, 4);
  ASSERT_TRUE(plan->fusion.has_value());
  EXPECT_EQ(plan->fusion->method, FusionMethod::kPosterior);
  EXPECT_EQ(plan->fusion->window_frames, 50);
  EXPECT_EQ(plan->fusion->acoustic_scale, 1.0);
  EXPECT_EQ(plan->transform, nullptr);
  auto single = PlanForStream(Config({"c"}), *repo_);
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(single->fusion.has_value());
}

TEST_F(ScoringPlanTest, RejectsBadConfigs) {
  ExpectError(Plan(Config({})), absl::StatusCode::kInvalidArgument, "no models named");
  ExpectError(Plan(Config({"a", "zzz"})), absl::StatusCode::kNotFound, "no model named 'zzz'");
  ExpectError(Plan(Config({"a", "a"})), absl::StatusCode::kInvalidArgument, "named twice");
  ExpectError(Plan(Config({"a", "c"})), absl::StatusCode::kInvalidArgument, "share one state set");
  ExpectError(Plan(Config({"a", "d"})), absl::StatusCode::kInvalidArgument, "dimension");
  v1::StreamConfig weights = Config({"a", "b"});
  weights.mutable_fusion()->set_method(v1::FUSION_METHOD_LOG_SUM_EXP);
  weights.mutable_fusion()->add_weights(1.0f);
  ExpectError(Plan(weights), absl::StatusCode::kInvalidArgument, "1 weights for 2 models");
  v1::StreamConfig negative = Config({"a", "b"});
  negative.mutable_fusion()->add_weights(1.0f);
  negative.mutable_fusion()->add_weights(-1.0f);
  ExpectError(Plan(negative), absl::StatusCode::kInvalidArgument, "weight 1");
  v1::StreamConfig transform = Config({"a"});
  transform.mutable_transform()->set_rows(3);
  transform.mutable_transform()->set_cols(4);
  ExpectError(Plan(transform), absl::StatusCode::kInvalidArgument, "transform");
  transform.mutable_transform()->set_rows(2);
  ExpectError(Plan(transform), absl::StatusCode::kInvalidArgument,
              "transform has 2 rows but the models have dimension 3");
}

TEST_F(ScoringPlanTest, AcceptsATransform) {
  v1::StreamConfig config = Config({"a"});
  config.mutable_transform()->set_rows(3);
  config.mutable_transform()->set_cols(4);
  for (int i = 0; i < 12; ++i) config.mutable_transform()->add_values(i % 5 == 0 ? 1.0f : 0.0f);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_NE(plan->transform, nullptr);
  EXPECT_EQ(plan->transform->dim(), 3);
}

TEST_F(ScoringPlanTest, ChecksFrames) {
  auto plan = PlanForStream(Config({"a"}), *repo_);
  ASSERT_TRUE(plan.ok());
  const FrameLimits limits{.first_frame = 100, .max_frames = 4};
  v1::FeatureMatrix chunk;
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "chunk at frame 100 has no frames");
  EXPECT_TRUE(CheckFrames(chunk, *plan, {.max_frames = 4, .allow_empty = true}).ok());
  chunk.set_num_frames(5);
  chunk.set_dim(3);
  chunk.mutable_values()->Resize(15, 0.0f);
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "has 5 frames; this server accepts at most 4");
  chunk.set_num_frames(2);
  chunk.set_dim(2);
  chunk.mutable_values()->Resize(4, 0.0f);
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "has dimension 2 but model 'a' has dimension 3");
  chunk.set_dim(3);
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "carries 4 values");
  chunk.mutable_values()->Resize(6, 0.0f);
  chunk.set_values(4, NAN);
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "frame 101 (row 1 of the chunk at frame 100), dimension 1 is nan");
  // Finite but squaring past float32: the one definition of a usable value.
  chunk.set_values(4, 3e38f);
  ExpectError(CheckFrames(chunk, *plan, limits).status(), absl::StatusCode::kInvalidArgument,
              "frame 101 (row 1 of the chunk at frame 100), dimension 1 is 3e+38; feature values "
              "must be finite with magnitude at most 1.8e19");
  chunk.set_values(4, kMaxFeatureMagnitude);
  EXPECT_TRUE(CheckFrames(chunk, *plan, limits).ok());
  chunk.set_values(4, 0.5f);
  auto frames = CheckFrames(chunk, *plan, limits);
  ASSERT_TRUE(frames.ok());
  EXPECT_EQ((*frames)->at(1, 1), 0.5f);
}

TEST_F(ScoringPlanTest, FillsAnswersWithAndWithoutFusion) {
  v1::StreamConfig config = Config({"a", "b"});
  config.mutable_output()->set_frame_totals(true);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok());
  std::vector<ScoreResult> results(2);
  for (int m = 0; m < 2; ++m) {
    results[m].loglikes = FloatMatrix(2, 4, -1.0f - m);
    results[m].frame_totals = {0.5f, 0.5f};
  }
  auto fusion = ModelFusion::Create(2, *plan->fusion);
  ASSERT_TRUE(fusion.ok());
  v1::StreamScoreResponse response;
  ASSERT_TRUE(FillAnswer(*plan, results, &*fusion, &response).ok());
  ASSERT_EQ(response.scores_size(), 2);
  EXPECT_EQ(response.scores(1).model(), "b");
  EXPECT_EQ(response.scores(1).frame_totals_size(), 2);
  EXPECT_EQ(response.fused().model(), "fused");
  EXPECT_FLOAT_EQ(response.fused().loglikes(0), -1.0f);  // max
  EXPECT_EQ(response.fusion().dominant_model(), "a");
  EXPECT_EQ(response.fusion().model_share_size(), 2);

  plan->fused_only = true;
  v1::ScoreResponse fused_only;
  ASSERT_TRUE(FillAnswer(*plan, results, &*fusion, &fused_only).ok());
  EXPECT_EQ(fused_only.scores_size(), 0);
  EXPECT_TRUE(fused_only.has_fused());
}

// A backend's half-precision scores make the answer the host's encoding
// makes of the float32 scores; they are asked for only where the answer
// sends every state in half precision and nothing else reads them.
TEST_F(ScoringPlanTest, HalvesFromTheBackendAnswerAsHalvesMadeHere) {
  v1::StreamConfig config = Config({"c"});
  config.mutable_output()->set_frame_totals(true);
  config.mutable_output()->set_float16(true);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(WantsHalvesFromBackend(*plan, /*adapts=*/false));
  EXPECT_FALSE(WantsHalvesFromBackend(*plan, /*adapts=*/true));
  std::vector<ScoreResult> floats(1), halves(1);
  floats[0].loglikes = FloatMatrix(3, 5);
  for (int i = 0; i < 15; ++i) floats[0].loglikes.data()[i] = -3.25f * i + 0.1f * (i % 4);
  floats[0].frame_totals = {1.0f, 2.0f, 3.0f};
  halves[0].half = HalfScoresFromFloats(floats[0].loglikes);
  halves[0].frame_totals = floats[0].frame_totals;
  v1::StreamScoreResponse here, there;
  ASSERT_TRUE(FillAnswer(*plan, floats, nullptr, &here).ok());
  ASSERT_TRUE(FillAnswer(*plan, halves, nullptr, &there).ok());
  EXPECT_FALSE(here.scores(0).loglikes_f16().empty());
  EXPECT_EQ(there.SerializeAsString(), here.SerializeAsString());

  // Not where the answer selects states, sends float32 or fuses; and an
  // answer refuses halves it did not ask for rather than mislabel them.
  config.mutable_output()->set_beam(5.0f);
  auto beam = PlanForStream(config, *repo_);
  ASSERT_TRUE(beam.ok());
  EXPECT_FALSE(WantsHalvesFromBackend(*beam, false));
  v1::StreamScoreResponse refused;
  EXPECT_EQ(FillAnswer(*beam, halves, nullptr, &refused).code(), absl::StatusCode::kInternal);
  v1::StreamConfig plain = Config({"c"});
  auto float32 = PlanForStream(plain, *repo_);
  ASSERT_TRUE(float32.ok());
  EXPECT_FALSE(WantsHalvesFromBackend(*float32, false));
  EXPECT_EQ(FillAnswer(*float32, halves, nullptr, &refused).code(), absl::StatusCode::kInternal);
  v1::StreamConfig fusing = Config({"a", "b"});
  fusing.mutable_output()->set_float16(true);
  auto fused = PlanForStream(fusing, *repo_);
  ASSERT_TRUE(fused.ok());
  EXPECT_FALSE(WantsHalvesFromBackend(*fused, false));
}

TEST_F(ScoringPlanTest, CountsTheBytesResultsHold) {
  v1::StreamConfig config = Config({"a", "b"});
  config.mutable_output()->set_frame_totals(true);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok());
  ScoreResult dense;
  dense.loglikes = FloatMatrix(10, 4);
  dense.frame_totals.assign(10, 0.0f);
  EXPECT_EQ(HeldBytes(dense), (40 + 10) * 4);
  ScoreResult selected;  // 2 of 4 states kept in each of 10 frames, by a GPU
  selected.sparse = SparseScores{.num_states = 4};
  for (int t = 0; t < 10; ++t) {
    selected.sparse->state_ids.insert(selected.sparse->state_ids.end(), {0, 3});
    selected.sparse->values.insert(selected.sparse->values.end(), {-1.0f, -2.0f});
    selected.sparse->frame_offsets.push_back(2 * (t + 1));
  }
  EXPECT_EQ(HeldBytes(selected), (20 + 20 + 11) * 4);
  ScoreResult halved;  // encoded in half precision by a GPU
  halved.half = HalfScoresFromFloats(dense.loglikes);
  halved.frame_totals.assign(10, 0.0f);
  EXPECT_EQ(HeldBytes(halved), 40 * 2 + 10 * 4 + 10 * 4);
  FusedScores fused;
  fused.loglikes = FloatMatrix(10, 4);
  fused.model_weights.assign(20, 0.5f);
  EXPECT_EQ(HeldBytes(fused), (40 + 20) * 4);
  EXPECT_EQ(HeldBytes(ScoreResult{}), 0);
}

TEST_F(ScoringPlanTest, HeldBoundBytesBoundWhatResultsHold) {
  v1::StreamConfig config = Config({"c"});  // 5 states
  config.mutable_output()->set_top_k(1);
  auto plan = PlanForStream(config, *repo_);
  ASSERT_TRUE(plan.ok());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> score(-50.0f, 0.0f);
  FloatMatrix scores(10, 5);
  for (int64_t i = 0; i < scores.rows() * scores.cols(); ++i) scores.data()[i] = score(rng);
  // Dense, as every backend call makes them: the matrix and a total a frame.
  ScoreResult dense;
  dense.loglikes = scores;
  dense.frame_totals.assign(10, 0.0f);
  EXPECT_EQ(HeldBoundBytes(*plan, 10, /*backend_selects=*/false), HeldBytes(dense));
  EXPECT_EQ(HeldBytes(dense), (50 + 10) * 4);
  // Selected by the backend: a value and an id a frame, 11 offsets, 10
  // totals.
  ScoreResult selected;
  selected.sparse = SelectStates(scores.view(), plan->sparse);
  selected.frame_totals.assign(10, 0.0f);
  EXPECT_EQ(HeldBytes(selected), (10 + 10 + 11 + 10) * 4);
  EXPECT_EQ(HeldBoundBytes(*plan, 10, /*backend_selects=*/true), HeldBytes(selected));
  // The CPU backend returns dense scores: its streams are charged those.
  EXPECT_FALSE(backend_->ReturnsSelected(*ReplicaOf(*plan, 0), plan->sparse));
  // No top_k (a beam alone may keep every state), a k of every state, or
  // fusion (fused windows are dense): the dense bound, whatever the backend.
  config.mutable_output()->set_top_k(0);
  config.mutable_output()->set_beam(5.0f);
  auto beam = PlanForStream(config, *repo_);
  ASSERT_TRUE(beam.ok());
  EXPECT_EQ(HeldBoundBytes(*beam, 10, true), HeldBoundBytes(*beam, 10, false));
  config.mutable_output()->set_top_k(5);
  auto every = PlanForStream(config, *repo_);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(HeldBoundBytes(*every, 10, true), HeldBytes(dense));
  v1::StreamConfig fusing = Config({"a", "b"});  // 4 states each
  fusing.mutable_output()->set_top_k(1);
  auto fused = PlanForStream(fusing, *repo_);
  ASSERT_TRUE(fused.ok());
  // Two models' and the fused matrices with their totals, and 2 weights a
  // frame.
  EXPECT_EQ(HeldBoundBytes(*fused, 10, true), (3 * (40 + 10) + 20) * 4);
}

}  // namespace
}  // namespace gmmscore
