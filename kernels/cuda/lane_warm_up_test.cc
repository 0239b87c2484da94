// WarmLane (lane_warm_up.h): after a warm-up of two models to N frames,
// calls of up to N frames of both, of every kind of answer (fused, adapting
// and gathering among them), cut into windows unlike the warm-up's, reuse
// the lane's buffers (the same sizes) and score as the float64 reference
// does; CudaBackend::WarmUp checks its arguments. Skips where no
// CUDA device answers (WarmUpSizes runs everywhere).
#include "kernels/cuda/lane_warm_up.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fmllr_gather_launch.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/feature_transform_reference.h"
#include "kernels/score/fusion.h"
#include "kernels/score/fusion_reference.h"
#include "kernels/score/posterior_policy.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

TEST(WarmUpSizesTest, DoublesFromSixteenAndEndsAtTheFrames) {
  EXPECT_EQ(WarmUpSizes(4096), (std::vector<int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(WarmUpSizes(100), (std::vector<int64_t>{16, 32, 64, 100}));
  EXPECT_EQ(WarmUpSizes(17), (std::vector<int64_t>{16, 17}));
  EXPECT_EQ(WarmUpSizes(16), (std::vector<int64_t>{16}));
  EXPECT_EQ(WarmUpSizes(3), (std::vector<int64_t>{3}));
  EXPECT_TRUE(WarmUpSizes(0).empty());
}

// The sizes of the buffers a call may grow (lane_pool.h): a growth frees
// and allocates, and may get the same address back, so sizes are compared.
struct LaneBuffers {
  std::vector<size_t> sizes;
  bool operator==(const LaneBuffers&) const = default;
};

LaneBuffers BuffersOf(const Lane& lane) {
  return {{lane.host_in.size(), lane.features.size(), lane.loglikes.size(), lane.host_out.size(),
           lane.gemm.slice_partials.size(), lane.gemm.job_table.size(), lane.host_segments.size(),
           lane.segments.size(), lane.transformed.size(), lane.fusion_host_in.size(), lane.fusion_in.size(),
           lane.fusion_host_out.size(), lane.fusion_out.size(), lane.host_gathers.size(), lane.gathers.size(),
           lane.gather_terms.size()}};
}

// A CUDA backend with two models prepared on it (a third added by a test).
class LaneWarmUpBase : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto backend = CreateCudaBackend(0, {.pinned_scores_bytes = 0});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    // Up to 80 Gaussians a state: the blocked kernels slice at some
    // lengths, and their partials must already fit. The second model, of
    // fewer states, shares calls with the first (one launch for both).
    AddModel({.num_states = 301, .min_gaussians = 1, .max_gaussians = 80, .dim = 39});
    AddModel({.num_states = 157, .min_gaussians = 1, .max_gaussians = 24, .dim = 39});
    auto info = CurrentDeviceInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    wgmma_ = info->has_wgmma();
  }

  void AddModel(SyntheticModelSpec spec) {
    spec.seed = random_();
    auto model = GenerateSyntheticModel(spec);
    ASSERT_TRUE(model.ok()) << model.status();
    models_.push_back(std::make_shared<const DiagGmmModel>(std::move(*model)));
    auto prepared = backend_->Prepare(models_.back());
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    prepared_.push_back(*std::move(prepared));
  }

  std::mt19937 random_{std::random_device{}()};
  std::unique_ptr<ScoringBackend> backend_;
  std::vector<std::shared_ptr<const DiagGmmModel>> models_;
  std::vector<std::shared_ptr<const PreparedModel>> prepared_;
  bool wgmma_ = false;
};

// How a test window is answered; kFused windows come in a fusion of two or
// three of one model and of equal frames.
enum class Kind { kWhole, kTopK, kHalves, kAdapting, kFused };

double BoundFor(Precision precision) {
  // "fast" may take the tensor-core kernel, held to its own bound.
  return ErrorBound(precision == Precision::kFast ? Algorithm::kWgmmaHalf : Algorithm::kAuto);
}

// `want`: the float64 reference of the window's frames (transformed first
// where it adapts).
void ExpectMatchesReference(const std::vector<double>& want, int64_t rows, int64_t states, const ScoreResult& got,
                            Kind kind, Precision precision) {
  if (kind == Kind::kWhole || kind == Kind::kAdapting || kind == Kind::kFused) {
    ASSERT_EQ(got.loglikes.rows(), rows);
    EXPECT_LE(MaxNormalizedError(got.loglikes, want), BoundFor(precision));
    if (kind != Kind::kFused) EXPECT_EQ(got.frame_totals.size(), static_cast<size_t>(rows));
    return;
  }
  if (kind == Kind::kTopK) {
    ASSERT_TRUE(got.sparse.has_value());
    ASSERT_EQ(got.sparse->num_frames(), rows);
    for (int64_t t = 0; t < rows; ++t) {
      const uint32_t begin = got.sparse->frame_offsets[t], end = got.sparse->frame_offsets[t + 1];
      ASSERT_EQ(end - begin, 7u) << "frame " << t;
      for (uint32_t i = begin; i < end; ++i) {
        const double reference = want[t * states + got.sparse->state_ids[i]];
        EXPECT_NEAR(got.sparse->values[i], reference, 1e-3 * std::max(1.0, std::abs(reference)));
      }
    }
    return;
  }
  ASSERT_TRUE(got.half.has_value());
  ASSERT_EQ(got.half->num_frames(), rows);
  for (int64_t t = 0; t < rows; ++t) {
    const double best = *std::max_element(want.begin() + t * states, want.begin() + (t + 1) * states);
    EXPECT_NEAR(got.half->frame_best[t], best, 1e-3 * std::max(1.0, std::abs(best))) << "frame " << t;
  }
}

// One random call's windows and what they need beside their frames.
struct RandomCall {
  std::vector<FloatMatrix> features;
  std::vector<Kind> kinds;
  std::vector<int> model_of;
  std::vector<std::vector<float>> transform_values;
  std::vector<FeatureTransform> transforms;
  std::vector<int> transform_of;  // per window, -1: none
  std::vector<ModelFusion> fusions;
  std::vector<FusionOptions> fusion_options;
  std::vector<std::vector<int>> fused_windows;
};

// With random calls of every kind and their float64 references.
class LaneWarmUpTest : public LaneWarmUpBase {
 protected:
  // Windows of `total` frames in all: uneven (the third one empty, 1-frame
  // ones, runs short enough for one launch of both models), of every kind,
  // fusions of two or three windows of one model and equal frames, adapting
  // windows that share a transform now and then, as one stream's chunks do.
  void DrawCall(int64_t total, RandomCall* c) {
    const int dim = static_cast<int>(models_[0]->dim());
    int64_t frames = 0;
    while (frames < total) {
      const Kind kind = static_cast<Kind>(random_() % 5);
      const int members = kind == Kind::kFused ? 2 + static_cast<int>(random_() % 2) : 1;
      if (total - frames < members) continue;
      const int64_t wanted = random_() % 3 == 0 ? 1 : 1 + random_() % 40;
      const bool empty = c->features.size() == 2 && kind != Kind::kFused;
      const int64_t rows = empty ? 0 : std::max<int64_t>(1, std::min<int64_t>((total - frames) / members, wanted));
      const int model = static_cast<int>(random_() % 2);
      if (kind == Kind::kFused) {
        const FusionOptions options{.method = random_() % 2 ? FusionMethod::kPosterior : FusionMethod::kMax};
        auto fusion = ModelFusion::Create(members, options);
        ASSERT_TRUE(fusion.ok()) << fusion.status();
        c->fusions.push_back(*std::move(fusion));
        c->fusion_options.push_back(options);
        c->fused_windows.emplace_back();
      }
      if (kind == Kind::kAdapting && (c->transforms.empty() || random_() % 3 != 0)) {
        c->transform_values.push_back(GenerateSyntheticTransform(dim, true, random_()));
        auto transform = FeatureTransform::Create(dim, dim + 1, c->transform_values.back());
        ASSERT_TRUE(transform.ok()) << transform.status();
        c->transforms.push_back(*std::move(transform));
      }
      for (int m = 0; m < members; ++m) {
        if (kind == Kind::kFused) c->fused_windows.back().push_back(static_cast<int>(c->features.size()));
        c->features.push_back(GenerateSyntheticFeatures(*models_[model], rows, random_()));
        c->kinds.push_back(kind);
        c->model_of.push_back(model);
        c->transform_of.push_back(kind == Kind::kAdapting ? static_cast<int>(c->transforms.size()) - 1 : -1);
        frames += rows;
      }
    }
  }

  // The call's windows into `results`; the first model's adapting windows
  // gather into `gather`.
  std::vector<ScoreWindow> WindowsOf(const RandomCall& c, Precision precision, FmllrGatherTarget* gather,
                                     std::vector<ScoreResult>& results) const {
    std::vector<ScoreWindow> windows;
    for (size_t w = 0; w < c.features.size(); ++w) {
      ScoreWindow window{.model = prepared_[c.model_of[w]].get(), .features = c.features[w].view(),
                         .result = &results[w], .precision = precision};
      if (c.kinds[w] == Kind::kTopK) window.select.top_k = 7;
      window.half_from_best = c.kinds[w] == Kind::kHalves;
      if (c.transform_of[w] >= 0) {
        window.transform = &c.transforms[c.transform_of[w]];
        if (c.model_of[w] == 0) window.gather = gather;
      }
      windows.push_back(window);
    }
    return windows;
  }

  // Every window and fusion against its float64 reference (a window's frames
  // transformed in float64 first where it adapts).
  void ExpectCallMatchesReference(const RandomCall& c, const std::vector<ScoreResult>& results,
                                  const std::vector<FusedScores>& fused, Precision precision) const {
    const int dim = static_cast<int>(models_[0]->dim());
    std::vector<std::vector<double>> want(c.features.size());
    for (size_t w = 0; w < c.features.size(); ++w) {
      const DiagGmmModel& model = *models_[c.model_of[w]];
      if (c.transform_of[w] < 0) {
        want[w] = ReferenceLogLikelihoods(model, c.features[w].view());
      } else {
        const std::vector<double> y =
            ReferenceTransform(dim, dim + 1, c.transform_values[c.transform_of[w]], c.features[w].view());
        FloatMatrix transformed(c.features[w].rows(), dim);
        std::copy(y.begin(), y.end(), transformed.data());
        want[w] = ReferenceLogLikelihoods(model, transformed.view());
      }
      if (c.features[w].rows() == 0) continue;
      SCOPED_TRACE(::testing::Message() << "window " << w);
      ExpectMatchesReference(want[w], c.features[w].rows(), model.num_states(), results[w], c.kinds[w], precision);
    }
    for (size_t f = 0; f < c.fusions.size(); ++f) {
      const std::vector<int>& members = c.fused_windows[f];
      std::vector<std::vector<double>> member_scores;
      for (int w : members) member_scores.push_back(want[w]);
      const int64_t rows = c.features[members[0]].rows();
      const FusionReference reference =
          ReferenceFuse(member_scores, rows, models_[c.model_of[members[0]]]->num_states(), c.fusion_options[f]);
      ASSERT_EQ(fused[f].loglikes.rows(), rows) << "fusion " << f;
      EXPECT_LE(MaxNormalizedError(fused[f].loglikes, reference.fused), 4 * BoundFor(precision)) << "fusion " << f;
    }
  }
};

TEST_F(LaneWarmUpTest, CallsUpToTheWarmedFramesReuseTheLanesBuffersAndScoreRight) {
  auto target = backend_->CreateFmllrGather(*prepared_[0], PosteriorPolicy{});
  ASSERT_TRUE(target.ok()) << target.status();
  // With no pool every whole score goes through lane.host_out; with one
  // (the daemon's) only the frame totals do, but for calls with fusions.
  const std::shared_ptr<PinnedBlockPool> pool =
      PinnedBlockPool::Create(size_t{1} << 20, 64, PinnedBlockPool::CudaPinned(), 64);
  for (PinnedBlockPool* scores_pool : {static_cast<PinnedBlockPool*>(nullptr), pool.get()})
  for (Precision precision : {Precision::kExact, Precision::kFast}) {
    SCOPED_TRACE(::testing::Message() << PrecisionName(precision) << (scores_pool ? ", pool" : ", no pool"));
    auto lanes = LanePool::Create(0, 1);  // every case from a lane that never grew
    ASSERT_TRUE(lanes.ok()) << lanes.status();
    LaneLease lane = (*lanes)->AcquireLane(0);
    const WarmUpShape shape{.frames = 333, .precision = precision, .top_k = 7};
    for (const std::shared_ptr<const PreparedModel>& prepared : prepared_) {
      // The target gathers for the first model only, as a daemon's warm-up
      // gathers into one made for each model.
      const LaneWarmUpTools tools{.wgmma_available = wgmma_,
                                  .scores_pool = scores_pool,
                                  .gather = prepared == prepared_[0] ? target->get() : nullptr};
      absl::Status warmed = WarmLane(*lane, *prepared, CudaModelOf(*prepared), shape, tools);
      ASSERT_TRUE(warmed.ok()) << warmed;
    }
    const LaneBuffers after_warm_up = BuffersOf(*lane);
    for (int call = 0; call < 12; ++call) {
      SCOPED_TRACE(::testing::Message() << "call " << call);
      RandomCall c;
      // Up to the warmed frames; the last call exactly those.
      DrawCall(call == 11 ? shape.frames : 1 + random_() % shape.frames, &c);
      ASSERT_FALSE(HasFatalFailure());
      std::vector<ScoreResult> results(c.features.size());
      const std::vector<ScoreWindow> windows = WindowsOf(c, precision, target->get(), results);
      std::vector<const DeviceModel*> resident;
      for (const ScoreWindow& window : windows) resident.push_back(CudaModelOf(*window.model).untied);
      std::vector<FusedScores> fused(c.fusions.size());
      std::vector<FusionJob> fusion_jobs;
      for (size_t f = 0; f < c.fusions.size(); ++f) {
        fusion_jobs.push_back({.windows = c.fused_windows[f], .fusion = &c.fusions[f], .out = &fused[f]});
      }
      ASSERT_TRUE(ValidateFusionJobs(windows, fusion_jobs).ok());
      absl::Status scored = ScoreUntiedOnLane(*lane, windows, resident, {.frame_totals = true}, fusion_jobs,
                                              wgmma_, scores_pool);
      ASSERT_TRUE(scored.ok()) << scored;
      EXPECT_TRUE(BuffersOf(*lane) == after_warm_up) << "a call grew a buffer";
      ExpectCallMatchesReference(c, results, fused, precision);
    }
    lane.MarkIdle();
  }
}

TEST_F(LaneWarmUpTest, BackendWarmUpChecksItsModelAndShape) {
  EXPECT_TRUE(backend_->WarmUp(*prepared_[0], {.frames = 64}).ok());
  auto cpu_model = CreateCpuBackend()->Prepare(models_[0]);
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status();
  EXPECT_EQ(backend_->WarmUp(**cpu_model, {.frames = 64}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->WarmUp(*prepared_[0], {.frames = 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->WarmUp(*prepared_[0], {.frames = 64, .window_frames = 0}).code(),
            absl::StatusCode::kInvalidArgument);
}

// Features wider than the device gathers fMLLR statistics for: the warm-up
// leaves gathering out instead of failing the model's load.
TEST_F(LaneWarmUpTest, BackendWarmsAModelItDoesNotGatherFor) {
  AddModel({.num_states = 40, .min_gaussians = 1, .max_gaussians = 4, .dim = kMaxGatherDim + 6});
  ASSERT_EQ(backend_->CreateFmllrGather(*prepared_.back(), PosteriorPolicy{}).status().code(),
            absl::StatusCode::kUnimplemented);
  absl::Status warmed = backend_->WarmUp(*prepared_.back(), {.frames = 40});
  EXPECT_TRUE(warmed.ok()) << warmed;
}

}  // namespace
}  // namespace gmmscore
