// WarmLane (lane_warm_up.h): after a warm-up to N frames, calls of up to N
// frames of every kind of answer, cut into windows unlike the warm-up's,
// reuse the lane's buffers (the same allocations) and score as the float64
// reference does; CudaBackend::WarmUp checks its arguments. Skips where no
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
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/model/synthetic_model.h"
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
  size_t host_in, features, loglikes, host_out, slice_partials;
  bool operator==(const LaneBuffers&) const = default;
};

LaneBuffers BuffersOf(const Lane& lane) {
  return {lane.host_in.size(), lane.features.size(), lane.loglikes.size(), lane.host_out.size(),
          lane.gemm.slice_partials.size()};
}

class LaneWarmUpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto backend = CreateCudaBackend(0, {.pinned_scores_bytes = 0});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    std::mt19937 random(std::random_device{}());
    auto model = GenerateSyntheticModel(
        {.num_states = 301, .min_gaussians = 1, .max_gaussians = 80, .dim = 39, .seed = random()});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_shared<const DiagGmmModel>(std::move(*model));
    auto prepared = backend_->Prepare(model_);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    prepared_ = *std::move(prepared);
    auto lanes = LanePool::Create(0, 1);
    ASSERT_TRUE(lanes.ok()) << lanes.status();
    lanes_ = std::move(*lanes);
    auto info = CurrentDeviceInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    wgmma_ = info->has_wgmma();
  }

  std::unique_ptr<ScoringBackend> backend_;
  std::shared_ptr<const DiagGmmModel> model_;
  std::shared_ptr<const PreparedModel> prepared_;
  std::unique_ptr<LanePool> lanes_;
  bool wgmma_ = false;
};

// Window w of a call: whole (w % 3 == 0), its top 7 states (1) or halves (2).
void ExpectMatchesReference(const DiagGmmModel& model, const FloatMatrix& features, const ScoreResult& got,
                            int kind, Precision precision) {
  const std::vector<double> want = ReferenceLogLikelihoods(model, features.view());
  const int64_t states = model.num_states();
  if (kind == 0) {
    ASSERT_EQ(got.loglikes.rows(), features.rows());
    // "fast" may take the tensor-core kernel, held to its own bound.
    EXPECT_LE(MaxNormalizedError(got.loglikes, want),
              ErrorBound(precision == Precision::kFast ? Algorithm::kWgmmaHalf : Algorithm::kAuto));
    return;
  }
  if (kind == 1) {
    ASSERT_TRUE(got.sparse.has_value());
    ASSERT_EQ(got.sparse->num_frames(), features.rows());
    for (int64_t t = 0; t < features.rows(); ++t) {
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
  ASSERT_EQ(got.half->num_frames(), features.rows());
  for (int64_t t = 0; t < features.rows(); ++t) {
    const double best = *std::max_element(want.begin() + t * states, want.begin() + (t + 1) * states);
    EXPECT_NEAR(got.half->frame_best[t], best, 1e-3 * std::max(1.0, std::abs(best))) << "frame " << t;
  }
}

TEST_F(LaneWarmUpTest, CallsUpToTheWarmedFramesReuseTheLanesBuffersAndScoreRight) {
  const CudaModel cuda = CudaModelOf(*prepared_);
  // With no pool every whole score goes through lane.host_out; with one
  // (the daemon's) only the frame totals do. Up to 80 Gaussians a state:
  // the blocked kernels slice at some lengths, and their partials must
  // already fit.
  const std::shared_ptr<PinnedBlockPool> pool =
      PinnedBlockPool::Create(size_t{1} << 20, 64, PinnedBlockPool::CudaPinned(), 64);
  for (PinnedBlockPool* scores_pool : {static_cast<PinnedBlockPool*>(nullptr), pool.get()})
  for (Precision precision : {Precision::kExact, Precision::kFast}) {
    SCOPED_TRACE(::testing::Message() << PrecisionName(precision) << (scores_pool ? ", pool" : ", no pool"));
    auto fresh = LanePool::Create(0, 1);  // every case from lanes that never grew
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    lanes_ = std::move(*fresh);
    LaneLease lane = lanes_->AcquireLane(0);
    const WarmUpShape shape{.frames = 333, .precision = precision, .top_k = 7};
    absl::Status warmed = WarmLane(*lane, *prepared_, cuda, shape, wgmma_, scores_pool);
    ASSERT_TRUE(warmed.ok()) << warmed;
    const LaneBuffers after_warm_up = BuffersOf(*lane);
    std::mt19937 random(std::random_device{}());
    for (int call = 0; call < 12; ++call) {
      // Uneven windows (an empty one and 1-frame ones among them) of one kind
      // each, mixed, up to the warmed frames; the last call exactly those.
      std::vector<FloatMatrix> features;
      int64_t frames = 0;
      const int64_t total = call == 11 ? shape.frames : 1 + random() % shape.frames;
      while (frames < total) {
        const int64_t wanted = random() % 3 == 0 ? 1 : 1 + random() % 40;
        const int64_t rows = std::min<int64_t>(total - frames, features.size() == 2 ? 0 : wanted);
        features.push_back(GenerateSyntheticFeatures(*model_, rows, random()));
        frames += rows;
      }
      std::vector<ScoreResult> results(features.size());
      std::vector<ScoreWindow> windows;
      for (size_t w = 0; w < features.size(); ++w) {
        ScoreWindow window{.model = prepared_.get(), .features = features[w].view(), .result = &results[w],
                           .precision = precision};
        if (w % 3 == 1) window.select.top_k = 7;
        window.half_from_best = w % 3 == 2;
        windows.push_back(window);
      }
      const std::vector<const DeviceModel*> resident(windows.size(), cuda.untied);
      absl::Status scored =
          ScoreUntiedOnLane(*lane, windows, resident, {.frame_totals = true}, {}, wgmma_, scores_pool);
      ASSERT_TRUE(scored.ok()) << scored;
      EXPECT_TRUE(BuffersOf(*lane) == after_warm_up) << "call " << call << " of " << frames << " frames grew a buffer";
      EXPECT_GT(BuffersOf(*lane).loglikes, 0u);
      for (size_t w = 0; w < features.size(); ++w) {
        if (features[w].rows() == 0) continue;
        ExpectMatchesReference(*model_, features[w], results[w], static_cast<int>(w % 3), precision);
      }
    }
    lane.MarkIdle();
  }
}

TEST_F(LaneWarmUpTest, BackendWarmUpChecksItsModelAndShape) {
  EXPECT_TRUE(backend_->WarmUp(*prepared_, {.frames = 64}).ok());
  auto cpu_model = CreateCpuBackend()->Prepare(model_);
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status();
  EXPECT_EQ(backend_->WarmUp(**cpu_model, {.frames = 64}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->WarmUp(*prepared_, {.frames = 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->WarmUp(*prepared_, {.frames = 64, .window_frames = 0}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
