// Every fusion method, with and without a speaker transform, through the
// daemon (streamed in uneven chunks, and as one Score request) against the
// float64 references: ReferenceTransform -> ReferenceLogLikelihoods ->
// ReferenceFuse.
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/score/feature_transform_reference.h"
#include "kernels/score/fusion_reference.h"
#include "kernels/score/reference_scorer.h"
#include "proto/wire_convert.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr int kDim = 39;
constexpr int kFrames = 120;
const std::vector<std::string> kModels = {"spk0", "spk1", "spk2"};

struct Case {
  std::string name;
  v1::FusionOptions proto;
  FusionOptions engine;
  bool transform;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (bool transform : {false, true}) {
    Case max{.name = "max", .transform = transform};
    max.proto.set_method(v1::FUSION_METHOD_MAX);
    max.engine.method = FusionMethod::kMax;
    Case lse{.name = "logsumexp", .transform = transform};
    lse.proto.set_method(v1::FUSION_METHOD_LOG_SUM_EXP);
    lse.engine.method = FusionMethod::kLogSumExp;
    for (float w : {0.2f, 0.5f, 0.3f}) {
      lse.proto.add_weights(w);
      lse.engine.weights.push_back(w);
    }
    Case posterior{.name = "posterior", .transform = transform};
    posterior.proto.set_method(v1::FUSION_METHOD_POSTERIOR);
    posterior.proto.set_window_frames(7);
    posterior.proto.set_acoustic_scale(0.5f);
    for (float w : {1.0f, 1.0f, 2.0f}) {
      posterior.proto.add_weights(w);
      posterior.engine.weights.push_back(w);
    }
    posterior.engine.method = FusionMethod::kPosterior;
    posterior.engine.window_frames = 7;
    posterior.engine.acoustic_scale = 0.5;
    cases.push_back(max);
    cases.push_back(lse);
    cases.push_back(posterior);
  }
  return cases;
}

class FusionTransformTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::pair<std::string, SyntheticModelSpec>> models;
    for (int m = 0; m < 3; ++m) {
      models.push_back({kModels[m],
                        {.num_states = 32, .min_gaussians = 2, .max_gaussians = 6, .dim = kDim,
                         .seed = static_cast<uint64_t>(40 + m)}});
    }
    daemon_ = TestDaemon::Start(models).release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  // The float64 chain for `features` under case `c`.
  struct Reference {
    FloatMatrix frames;  // the transformed frames, rounded to float
    std::vector<std::vector<double>> loglikes;  // per model, T x S
    std::vector<FloatMatrix> allowance;         // per model, T x S
    double fused_allowance = 0.0;
    FusionReference fused;
  };
  Reference MakeReference(const FloatMatrix& features, const std::vector<float>& transform,
                          const Case& c) {
    Reference ref;
    ref.frames = features;
    if (c.transform) {
      std::vector<double> y = ReferenceTransform(kDim, kDim + 1, transform, features.view());
      for (size_t i = 0; i < y.size(); ++i) ref.frames.data()[i] = static_cast<float>(y[i]);
    }
    for (const std::string& name : kModels) {
      const DiagGmmModel& model = daemon_->model(name);
      ref.loglikes.push_back(ReferenceLogLikelihoods(model, ref.frames.view()));
      ref.allowance.push_back(ScoreAllowance(model, ref.frames.view()));
      for (float a : ref.allowance.back().span()) {
        ref.fused_allowance = std::max<double>(ref.fused_allowance, a);
      }
    }
    ref.fused_allowance *= 1.0 + 2.0 * c.engine.acoustic_scale;
    ref.fused = ReferenceFuse(ref.loglikes, features.rows(), 32, c.engine);
    return ref;
  }

  static v1::AffineTransform TransformProto(const std::vector<float>& values) {
    v1::AffineTransform proto;
    proto.set_rows(kDim);
    proto.set_cols(kDim + 1);
    proto.mutable_values()->Add(values.begin(), values.end());
    return proto;
  }

  using FrameCheck = std::function<void(const FloatMatrix& matrix, int64_t row, int64_t frame,
                                         const std::string& where)>;

  // Sends `features` for model "spk*" of `config` on a stream (chunks of
  // 10, 1, 29, 10 and 70 frames) and as one Score request with the same
  // output options; calls check_frame for every frame of every answer and
  // check_wire on the Score answer's one StateScores. Stops at the first
  // fatal failure.
  void ForEachAnsweredFrame(const v1::StreamConfig& config, const FloatMatrix& features,
                            const std::string& where, const FrameCheck& check_frame,
                            const std::function<void(const v1::StateScores&)>& check_wire) {
    std::unique_ptr<Client> client = daemon_->NewClient();
    auto session = client->StartStream(config);
    ASSERT_TRUE(session.ok()) << session.status();
    const std::vector<int64_t> sizes = {10, 1, 29, 10, 70};
    for (int64_t first = 0, i = 0; first < kFrames; first += sizes[i++]) {
      ASSERT_TRUE((*session)->Push(features.view().Rows(first, sizes[i])).ok());
    }
    ASSERT_TRUE((*session)->CloseSend().ok());
    for (int64_t first = 0, i = 0; first < kFrames; first += sizes[i++]) {
      absl::StatusOr<StreamAnswer> answer = (*session)->Next();
      ASSERT_TRUE(answer.ok()) << where << ": " << answer.status();
      ASSERT_EQ(answer->scores.rows(), sizes[i]) << where;
      for (int64_t t = 0; t < sizes[i]; ++t) {
        check_frame(answer->scores, t, first + t, absl::StrCat(where, " stream"));
        if (HasFatalFailure()) return;
      }
    }
    EXPECT_TRUE((*session)->Finish().ok());

    v1::ScoreRequest request;
    request.add_models(config.models(0));
    FeaturesToProto(features.view(), request.mutable_features());
    *request.mutable_output() = config.output();
    absl::StatusOr<v1::ScoreResponse> response = client->Score(request);
    ASSERT_TRUE(response.ok()) << where << ": " << response.status();
    ASSERT_EQ(response->scores_size(), 1);
    check_wire(response->scores(0));
    absl::StatusOr<FloatMatrix> scores = ScoresFromProto(response->scores(0));
    ASSERT_TRUE(scores.ok()) << scores.status();
    for (int64_t t = 0; t < kFrames; ++t) {
      check_frame(*scores, t, t, absl::StrCat(where, " Score"));
      if (HasFatalFailure()) return;
    }
  }

  // Checks row t of a sparse answer (dropped states -inf) against the
  // reference's scores of its frame: kept values near theirs, within `beam`
  // of the best, none dropped beating one kept, and as many as the
  // selection keeps: top_k, or fewer where fewer lie within the beam
  // (counted with the tolerance either way).
  static void ExpectSparseFrame(const FloatMatrix& matrix, int64_t t, const std::function<double(int)>& reference,
                                double tolerance, float beam, int top_k, const std::string& where, int* kept) {
    double best = -INFINITY, lowest_kept = INFINITY, highest_dropped = -INFINITY;
    *kept = 0;
    ASSERT_EQ(matrix.cols(), 32) << where;
    for (int s = 0; s < 32; ++s) best = std::max(best, reference(s));
    for (int s = 0; s < 32; ++s) {
      const float value = matrix.at(t, s);
      if (std::isfinite(value)) {
        ++*kept;
        ASSERT_NEAR(value, reference(s), tolerance) << where << " state " << s;
        if (beam > 0) ASSERT_GE(reference(s), best - beam - tolerance) << where << " state " << s;
        lowest_kept = std::min(lowest_kept, reference(s));
      } else {
        ASSERT_EQ(value, -INFINITY) << where << " state " << s;
        highest_dropped = std::max(highest_dropped, reference(s));
      }
    }
    int surely_within = 0, maybe_within = 0;
    for (int s = 0; s < 32; ++s) {
      surely_within += beam <= 0 || reference(s) >= best - beam + 2 * tolerance;
      maybe_within += beam <= 0 || reference(s) >= best - beam - 2 * tolerance;
    }
    ASSERT_GE(*kept, std::max(1, std::min(top_k, surely_within))) << where;
    ASSERT_LE(*kept, std::min(top_k, maybe_within)) << where;
    ASSERT_LE(highest_dropped, lowest_kept + 2 * tolerance) << where;
  }

  // Checks one answer (rows [first, first + T)) against the reference.
  static void ExpectAnswer(const Reference& ref, int64_t first, const FloatMatrix& fused,
                           const std::vector<FloatMatrix>& models, const v1::FusionReport& report,
                           const std::string& where) {
    const int64_t rows = fused.rows();
    ASSERT_EQ(models.size(), kModels.size()) << where;
    for (size_t m = 0; m < kModels.size(); ++m) {
      for (int64_t t = 0; t < rows; ++t) {
        for (int s = 0; s < 32; ++s) {
          ASSERT_NEAR(models[m].at(t, s), ref.loglikes[m][(first + t) * 32 + s],
                      ref.allowance[m].at(first + t, s))
              << where << " model " << kModels[m] << " frame " << first + t << " state " << s;
        }
      }
    }
    std::vector<int> dominated(kModels.size(), 0);
    for (int64_t t = 0; t < rows; ++t) {
      for (int s = 0; s < 32; ++s) {
        ASSERT_NEAR(fused.at(t, s), ref.fused.fused[(first + t) * 32 + s], ref.fused_allowance)
            << where << " fused frame " << first + t << " state " << s;
      }
      ++dominated[ref.fused.dominant_per_frame[first + t]];
    }
    if (!ref.fused.weights.empty()) {
      ASSERT_EQ(report.model_weights_size(), rows * 3) << where;
      for (int64_t i = 0; i < rows * 3; ++i) {
        ASSERT_NEAR(report.model_weights(i), ref.fused.weights[first * 3 + i],
                    1e-6 + ref.fused_allowance)
            << where << " weight " << i;
      }
    }
    // Dominance may flip on a frame where two models tie within rounding.
    ASSERT_EQ(report.model_share_size(), 3) << where;
    for (int m = 0; m < 3; ++m) {
      EXPECT_NEAR(report.model_share(m), static_cast<double>(dominated[m]) / rows, 1.01 / rows)
          << where << " share of " << kModels[m];
    }
  }

  static TestDaemon* daemon_;
};

TestDaemon* FusionTransformTest::daemon_ = nullptr;

TEST_F(FusionTransformTest, StreamedFusionAndTransformMatchTheFloat64Reference) {
  ASSERT_NE(daemon_, nullptr);
  std::unique_ptr<Client> client = daemon_->NewClient();
  const std::vector<int> chunk_sizes = {1, 13, 50, 7, 2, 30, 17};  // sums to 120
  int seed = 0;
  for (const Case& c : Cases()) {
    ++seed;
    const std::string where = absl::StrCat(c.name, c.transform ? "+transform" : "");
    const FloatMatrix features = TestFeatures(daemon_->model("spk1"), kFrames, 70 + seed);
    const std::vector<float> transform = TestTransform(kDim, 80 + seed);
    const Reference ref = MakeReference(features, transform, c);

    v1::StreamConfig config;
    for (const std::string& name : kModels) config.add_models(name);
    *config.mutable_fusion() = c.proto;
    if (c.transform) *config.mutable_transform() = TransformProto(transform);
    auto session = client->StartStream(config);
    ASSERT_TRUE(session.ok());
    int64_t first = 0;
    for (int size : chunk_sizes) {
      ASSERT_TRUE((*session)->Push(features.view().Rows(first, size)).ok());
      first += size;
    }
    ASSERT_TRUE((*session)->CloseSend().ok());
    first = 0;
    for (int size : chunk_sizes) {
      absl::StatusOr<StreamAnswer> answer = (*session)->Next();
      ASSERT_TRUE(answer.ok()) << where << ": " << answer.status();
      ASSERT_EQ(answer->first_frame, first);
      ASSERT_EQ(answer->scores.rows(), size);
      ExpectAnswer(ref, first, answer->scores, answer->model_scores, answer->fusion,
                   absl::StrCat(where, " chunk at ", first));
      EXPECT_EQ(answer->dominant_model,
                kModels[answer->fusion.dominant_model_index()]);
      first += size;
    }
    EXPECT_TRUE((*session)->Finish().ok()) << where;
  }
}

// Sparse answers (OutputOptions.beam, top_k): every matrix keeps, per frame,
// the states within the beam of its best, at most top_k of them, with the
// reference's values; nothing it drops beats what it keeps.
TEST_F(FusionTransformTest, SparseAnswersKeepTheBeamAndTopKOfEveryMatrix) {
  ASSERT_NE(daemon_, nullptr);
  std::unique_ptr<Client> client = daemon_->NewClient();
  const Case c = Cases()[2];  // posterior fusion, no transform (a copy: Cases() is a temporary)
  const FloatMatrix features = TestFeatures(daemon_->model("spk1"), kFrames, 91);
  const Reference ref = MakeReference(features, {}, c);
  constexpr float kBeam = 6.0f;
  constexpr int kTopK = 5;
  v1::StreamConfig config;
  for (const std::string& name : kModels) config.add_models(name);
  *config.mutable_fusion() = c.proto;
  config.mutable_output()->set_beam(kBeam);
  config.mutable_output()->set_top_k(kTopK);
  auto session = client->StartStream(config);
  ASSERT_TRUE(session.ok());
  for (int64_t first = 0; first < kFrames; first += 40) {
    ASSERT_TRUE((*session)->Push(features.view().Rows(first, 40)).ok());
  }
  ASSERT_TRUE((*session)->CloseSend().ok());
  int64_t kept_total = 0;
  for (int64_t first = 0; first < kFrames; first += 40) {
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    ASSERT_TRUE(answer.ok()) << answer.status();
    std::vector<std::pair<std::string, const FloatMatrix*>> matrices = {{"fused", &answer->scores}};
    for (size_t m = 0; m < answer->model_scores.size(); ++m) {
      matrices.push_back({kModels[m], &answer->model_scores[m]});
    }
    ASSERT_EQ(matrices.size(), 4u);
    for (const auto& [name, matrix] : matrices) {
      for (int64_t t = 0; t < 40; ++t) {
        const int64_t frame = first + t;
        auto reference = [&](int s) {
          if (name == "fused") return ref.fused.fused[frame * 32 + s];
          const size_t m = std::find(kModels.begin(), kModels.end(), name) - kModels.begin();
          return ref.loglikes[m][frame * 32 + s];
        };
        const double tolerance = name == "fused" ? ref.fused_allowance : 1e-3;
        int kept = 0;
        ExpectSparseFrame(*matrix, t, reference, tolerance, kBeam, kTopK,
                          absl::StrCat(name, " frame ", frame), &kept);
        if (HasFatalFailure()) return;
        kept_total += kept;
      }
    }
  }
  EXPECT_TRUE((*session)->Finish().ok());
  // Something was dropped (else the test proves nothing).
  EXPECT_LT(kept_total, 4 * kFrames * kTopK);
}

// Sparse answers of one model, streamed and unary: its windows ask the
// backend for the selection (on a GPU the top_k is picked on the device);
// chunks of uneven size, one of a single frame.
TEST_F(FusionTransformTest, SingleModelSparseAnswersKeepTheBeamAndTopK) {
  ASSERT_NE(daemon_, nullptr);
  const FloatMatrix features = TestFeatures(daemon_->model("spk2"), kFrames, 93);
  const std::vector<double> loglikes = ReferenceLogLikelihoods(daemon_->model("spk2"), features.view());
  for (const auto& [beam, top_k] : std::vector<std::pair<float, int>>{{0.0f, 3}, {4.0f, 6}, {0.0f, 1}}) {
    v1::StreamConfig config;
    config.add_models("spk2");
    config.mutable_output()->set_beam(beam);
    config.mutable_output()->set_top_k(top_k);
    config.mutable_output()->set_frame_totals(true);
    ForEachAnsweredFrame(
        config, features, absl::StrCat("beam ", beam, " top_k ", top_k),
        [&, beam = beam, top_k = top_k](const FloatMatrix& matrix, int64_t row, int64_t frame,
                                        const std::string& where) {
          int kept = 0;
          ExpectSparseFrame(
              matrix, row, [&loglikes, frame](int s) { return loglikes[frame * 32 + s]; }, 1e-3,
              beam, top_k, absl::StrCat(where, " frame ", frame), &kept);
        },
        [](const v1::StateScores& wire) {
          EXPECT_EQ(wire.frame_totals_size(), kFrames) << "totals over all states, also sparse";
          EXPECT_GT(wire.frame_offsets_size(), 0) << "a sparse answer";
        });
    if (HasFatalFailure()) return;
  }
}

// OutputOptions.float16: streams and Score requests, dense and top_k, come
// back as halves on the wire and decode to within 2^-11 of each value's
// distance below its frame's best (plus the float32 tolerance).
TEST_F(FusionTransformTest, HalfPrecisionAnswersStayWithinTheirBound) {
  ASSERT_NE(daemon_, nullptr);
  const FloatMatrix features = TestFeatures(daemon_->model("spk1"), kFrames, 77);
  const std::vector<double> reference = ReferenceLogLikelihoods(daemon_->model("spk1"), features.view());
  for (int top_k : {0, 5}) {
    v1::StreamConfig config;
    config.add_models("spk1");
    config.mutable_output()->set_top_k(top_k);
    config.mutable_output()->set_float16(true);
    const auto check_frame = [&](const FloatMatrix& matrix, int64_t row, int64_t frame,
                                 const std::string& where) {
      double best = -INFINITY;
      for (int s = 0; s < 32; ++s) best = std::max(best, reference[frame * 32 + s]);
      int kept = 0;
      double lowest_kept = INFINITY, highest_dropped = -INFINITY;
      for (int s = 0; s < 32; ++s) {
        const double want = reference[frame * 32 + s];
        const float got = matrix.at(row, s);
        if (got == -INFINITY) {
          highest_dropped = std::max(highest_dropped, want);
          continue;
        }
        ++kept;
        lowest_kept = std::min(lowest_kept, want);
        ASSERT_LE(std::abs(got - want), 1e-3 + std::ldexp(best - want, -11))
            << where << " frame " << frame << " state " << s;
      }
      ASSERT_EQ(kept, top_k > 0 ? top_k : 32) << where << " frame " << frame;
      ASSERT_LE(highest_dropped, lowest_kept + 2e-3) << where << " frame " << frame;
    };
    ForEachAnsweredFrame(config, features, absl::StrCat("float16 top_k ", top_k), check_frame,
                         [top_k](const v1::StateScores& wire) {
                           EXPECT_EQ(wire.loglikes_size(), 0) << "halves only";
                           EXPECT_EQ(wire.loglikes_f16().size(),
                                     2u * (top_k > 0 ? top_k : 32) * kFrames);
                           EXPECT_EQ(wire.frame_best_size(), kFrames);
                         });
    if (HasFatalFailure()) return;
  }
}

TEST_F(FusionTransformTest, ScoreRequestsMatchTheFloat64Reference) {
  ASSERT_NE(daemon_, nullptr);
  std::unique_ptr<Client> client = daemon_->NewClient();
  int seed = 100;
  for (const Case& c : Cases()) {
    ++seed;
    const std::string where = absl::StrCat("Score ", c.name, c.transform ? "+transform" : "");
    const FloatMatrix features = TestFeatures(daemon_->model("spk0"), kFrames, seed);
    const std::vector<float> transform = TestTransform(kDim, seed + 1);
    const Reference ref = MakeReference(features, transform, c);
    v1::ScoreRequest request;
    for (const std::string& name : kModels) request.add_models(name);
    FeaturesToProto(features.view(), request.mutable_features());
    *request.mutable_fusion() = c.proto;
    if (c.transform) *request.mutable_transform() = TransformProto(transform);
    absl::StatusOr<v1::ScoreResponse> response = client->Score(request);
    ASSERT_TRUE(response.ok()) << where << ": " << response.status();
    std::vector<FloatMatrix> models;
    for (const v1::StateScores& scores : response->scores()) {
      models.push_back(*ScoresFromProto(scores));
    }
    ExpectAnswer(ref, 0, *ScoresFromProto(response->fused()), models, response->fusion(), where);
  }
}

TEST_F(FusionTransformTest, SingleModelWithTransformMatchesTheReferenceAndHasNoFusion) {
  ASSERT_NE(daemon_, nullptr);
  std::unique_ptr<Client> client = daemon_->NewClient();
  const FloatMatrix features = TestFeatures(daemon_->model("spk2"), 40, 5);
  const std::vector<float> transform = TestTransform(kDim, 6);
  std::vector<double> y = ReferenceTransform(kDim, kDim + 1, transform, features.view());
  FloatMatrix frames(40, kDim);
  for (size_t i = 0; i < y.size(); ++i) frames.data()[i] = static_cast<float>(y[i]);
  const std::vector<double> ref = ReferenceLogLikelihoods(daemon_->model("spk2"), frames.view());
  const FloatMatrix allowance = ScoreAllowance(daemon_->model("spk2"), frames.view());

  v1::StreamConfig config;
  config.add_models("spk2");
  *config.mutable_transform() = TransformProto(transform);
  config.mutable_output()->set_frame_totals(true);
  auto session = client->StartStream(config);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Push(features.view()).ok());
  absl::StatusOr<StreamAnswer> answer = (*session)->Next();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_TRUE(answer->model_scores.empty());
  EXPECT_TRUE(answer->dominant_model.empty());
  for (int64_t t = 0; t < 40; ++t) {
    for (int s = 0; s < 32; ++s) {
      ASSERT_NEAR(answer->scores.at(t, s), ref[t * 32 + s], allowance.at(t, s));
    }
  }
  EXPECT_TRUE((*session)->Finish().ok());
}

}  // namespace
}  // namespace gmmscore
