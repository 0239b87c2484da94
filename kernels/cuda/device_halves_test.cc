// Half-precision encoding on the device (ScoreWindow::half_from_best,
// DeviceHalves) against the host's encoding of the same float32 scores
// (proto/wire_convert.h HalfScoresFromFloats, what an answer sends): bit for
// bit, in one batch with windows that must not be encoded. Skips where no
// CUDA device answers (CI); runs for real on the GPU machine.
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend_fixture.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/cuda/half_encode_launch.h"
#include "kernels/model/synthetic_model.h"
#include "proto/wire_convert.h"

namespace gmmscore {
namespace {

class DeviceHalvesTest : public CudaBackendFixture {};

// A result filled with what no backend writes, so that a field left as it
// was shows.
ScoreResult Poisoned() {
  ScoreResult result;
  result.loglikes = FloatMatrix(3, 2, 12345.0f);
  result.frame_totals = {7.0f};
  result.half = HalfScores{.num_states = 99, .values = {1, 2, 3}, .frame_best = {4.0f}};
  return result;
}

struct Case {
  int model;        // index into the test's models
  int64_t rows;
  bool half;        // half_from_best
  StateSelection select;
  bool transform;
};

TEST_F(DeviceHalvesTest, HalvesMatchTheHostEncodingBitForBit) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  // One state; 63 states of 1-20 Gaussians; 5000 states (more than the
  // kernel's 256 threads a frame) of a few Gaussians.
  std::vector<std::shared_ptr<const PreparedModel>> models = {
      Prepare({.num_states = 1, .min_gaussians = 1, .max_gaussians = 3, .dim = 13, .seed = seed}),
      Prepare({.num_states = 63, .min_gaussians = 1, .max_gaussians = 20, .dim = 39, .seed = seed + 1}),
      Prepare({.num_states = 5000, .min_gaussians = 1, .max_gaussians = 4, .dim = 36, .seed = seed + 2})};
  const std::vector<Case> cases = {
      {2, 10, true, {}, false},       {2, 0, true, {}, false},        {2, 7, false, {}, false},
      {1, 33, true, {}, true},        {1, 9, true, {.top_k = 5}, false},  // selected: sparse
      {1, 12, true, {.beam = 8.0f}, false},                                // beam: dense floats
      {0, 1, true, {}, false},        {0, 300, true, {}, false},      {2, 130, true, {}, true}};
  auto transform = FeatureTransform::Create(39, 40, [] {
    std::vector<float> values(39 * 40, 0.0f);
    for (int d = 0; d < 39; ++d) values[d * 40 + d] = 1.25f, values[d * 40 + 39] = 0.5f;
    return values;
  }());
  ASSERT_TRUE(transform.ok()) << transform.status();
  auto transform36 = FeatureTransform::Create(36, 37, [] {
    std::vector<float> values(36 * 37, 0.0f);
    for (int d = 0; d < 36; ++d) values[d * 37 + d] = 0.75f, values[d * 37 + 36] = -0.25f;
    return values;
  }());
  ASSERT_TRUE(transform36.ok()) << transform36.status();

  std::vector<FloatMatrix> features;
  for (size_t c = 0; c < cases.size(); ++c) {
    features.push_back(GenerateSyntheticFeatures(models[cases[c].model]->model(), cases[c].rows, seed + 10 + c));
  }
  std::vector<ScoreResult> halves(cases.size()), floats(cases.size());
  std::vector<ScoreWindow> half_jobs, float_jobs;
  for (size_t c = 0; c < cases.size(); ++c) {
    halves[c] = Poisoned();
    floats[c] = Poisoned();
    const FeatureTransform* t =
        !cases[c].transform ? nullptr : (models[cases[c].model]->dim() == 39 ? &*transform : &*transform36);
    ScoreWindow job{.model = models[cases[c].model].get(),
                    .features = features[c].view(),
                    .result = &halves[c],
                    .transform = t,
                    .select = cases[c].select,
                    .half_from_best = cases[c].half};
    half_jobs.push_back(job);
    job.result = &floats[c];
    job.half_from_best = false;
    job.select = {};
    float_jobs.push_back(job);
  }
  // The same windows in the same order: the same runs and kernels, so the
  // same float32 scores.
  ASSERT_TRUE(backend_->ScoreBatch(half_jobs, {.frame_totals = true}).ok());
  ASSERT_TRUE(backend_->ScoreBatch(float_jobs, {.frame_totals = true}).ok());

  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(testing::Message() << "window " << c << " rows " << cases[c].rows);
    const ScoreResult& got = halves[c];
    const ScoreResult& want = floats[c];
    ASSERT_FALSE(want.half.has_value());
    ASSERT_EQ(want.loglikes.rows(), cases[c].rows);
    EXPECT_EQ(got.frame_totals, want.frame_totals) << "totals over the float32 scores";
    const bool encoded = cases[c].half && cases[c].select.dense();
    if (!encoded) {
      EXPECT_FALSE(got.half.has_value());
      if (cases[c].select.top_k > 0) {
        EXPECT_TRUE(got.sparse.has_value());
      } else {
        EXPECT_EQ(std::memcmp(got.loglikes.data(), want.loglikes.data(),
                              sizeof(float) * want.loglikes.rows() * want.loglikes.cols()),
                  0);
      }
      continue;
    }
    ASSERT_TRUE(got.half.has_value());
    EXPECT_EQ(got.loglikes.rows() * got.loglikes.cols(), 0) << "no float32 scores beside the halves";
    EXPECT_FALSE(got.sparse.has_value());
    const HalfScores reference = HalfScoresFromFloats(want.loglikes);
    EXPECT_EQ(got.half->num_states, reference.num_states);
    ASSERT_EQ(got.half->frame_best, reference.frame_best);
    ASSERT_EQ(got.half->values.size(), reference.values.size());
    for (size_t i = 0; i < reference.values.size(); ++i) {
      ASSERT_EQ(got.half->values[i], reference.values[i])
          << "frame " << i / reference.num_states << " state " << i % reference.num_states;
    }
  }
}

// The kernel alone on scores no model gives: -inf states, a frame of only
// -inf, signed zeros at the best, distances that saturate or round past the
// largest half, and segments of no rows among the others; 0xFF poison in
// every output.
TEST(HalfEncodeKernelTest, AwkwardScoresMatchTheHostBitForBit) {
  SKIP_WITHOUT_GPU();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> value(-80.0f, 30.0f);
  // Windows: rows x states, in launch order; the 0-row ones test the
  // segment search.
  std::vector<FloatMatrix> windows;
  windows.emplace_back(0, 7);
  windows.emplace_back(2, 3);
  windows.back().at(0, 0) = -kInf, windows.back().at(0, 1) = -1.5f, windows.back().at(0, 2) = 2.0f;
  for (int s = 0; s < 3; ++s) windows.back().at(1, s) = -kInf;
  windows.emplace_back(0, 4);
  windows.emplace_back(1, 300);
  for (int s = 0; s < 300; ++s) {
    const float pattern[] = {-0.0f, 0.0f, -5.0f, -1e6f, -65519.0f, -65520.0f, -70000.0f, -3e-8f};
    windows.back().at(0, s) = pattern[s % 8];
  }
  windows.emplace_back(3, 5000);
  for (int64_t i = 0; i < 3 * 5000; ++i) windows.back().data()[i] = value(rng);
  windows.back().at(1, 17) = -kInf;
  windows.emplace_back(0, 2);

  std::vector<HalfSegment> segments;
  std::vector<float> scores;
  int64_t rows = 0, halves = 0;
  for (const FloatMatrix& w : windows) {
    segments.push_back({.first_row = rows,
                        .scores_offset = static_cast<int64_t>(scores.size()),
                        .halves_offset = halves,
                        .rows = static_cast<int32_t>(w.rows()),
                        .states = static_cast<int32_t>(w.cols())});
    scores.insert(scores.end(), w.data(), w.data() + w.rows() * w.cols());
    rows += w.rows();
    halves += w.rows() * w.cols();
  }
  auto d_segments = DeviceBuffer<HalfSegment>::FromHost(segments.data(), segments.size());
  auto d_scores = DeviceBuffer<float>::FromHost(scores.data(), scores.size());
  auto d_best = DeviceBuffer<float>::Allocate(rows);
  auto d_halves = DeviceBuffer<uint16_t>::Allocate(halves);
  ASSERT_TRUE(d_segments.ok() && d_scores.ok() && d_best.ok() && d_halves.ok());
  ASSERT_EQ(cudaMemset(d_best->data(), 0xFF, d_best->bytes()), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_halves->data(), 0xFF, d_halves->bytes()), cudaSuccess);
  ASSERT_TRUE(LaunchHalfEncode(d_segments->data(), static_cast<int>(segments.size()), rows, d_scores->data(),
                               d_best->data(), d_halves->data(), nullptr)
                  .ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> best(rows);
  std::vector<uint16_t> got(halves);
  ASSERT_EQ(cudaMemcpy(best.data(), d_best->data(), d_best->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), d_halves->data(), d_halves->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);

  for (size_t w = 0; w < windows.size(); ++w) {
    const HalfScores want = HalfScoresFromFloats(windows[w]);
    const HalfSegment& segment = segments[w];
    for (int t = 0; t < segment.rows; ++t) {
      ASSERT_EQ(std::memcmp(&best[segment.first_row + t], &want.frame_best[t], sizeof(float)), 0)
          << "window " << w << " frame " << t << ": best " << best[segment.first_row + t] << " vs "
          << want.frame_best[t];
      for (int s = 0; s < segment.states; ++s) {
        ASSERT_EQ(got[segment.halves_offset + int64_t{t} * segment.states + s], want.values[t * segment.states + s])
            << "window " << w << " frame " << t << " state " << s << " score " << windows[w].at(t, s);
      }
    }
  }
  EXPECT_EQ(best[1], 0.0f) << "a frame of only -inf is sent against 0";
}

// Windows of a fusion are fused from their float32 scores and come back as
// float32 (model_scores), whatever half_from_best says.
TEST_F(DeviceHalvesTest, FusedWindowsStayFloat32) {
  auto a = Prepare({.num_states = 40, .min_gaussians = 2, .max_gaussians = 6, .dim = 13, .seed = 5});
  auto b = Prepare({.num_states = 40, .min_gaussians = 2, .max_gaussians = 6, .dim = 13, .seed = 6});
  const FloatMatrix features = GenerateSyntheticFeatures(a->model(), 20, 7);
  std::vector<ScoreResult> results = {Poisoned(), Poisoned()};
  std::vector<ScoreWindow> jobs = {
      {.model = a.get(), .features = features.view(), .result = &results[0], .half_from_best = true},
      {.model = b.get(), .features = features.view(), .result = &results[1], .half_from_best = true}};
  auto fusion = ModelFusion::Create(2, {});
  ASSERT_TRUE(fusion.ok());
  FusedScores fused;
  const std::vector<FusionJob> fusions = {{.windows = {0, 1}, .fusion = &*fusion, .out = &fused}};
  ASSERT_TRUE(backend_->ScoreFusedBatch(jobs, fusions, {}).ok());
  for (const ScoreResult& result : results) {
    EXPECT_FALSE(result.half.has_value());
    EXPECT_EQ(result.loglikes.rows(), 20);
    EXPECT_EQ(result.loglikes.cols(), 40);
  }
  EXPECT_EQ(fused.loglikes.rows(), 20);
}

}  // namespace
}  // namespace gmmscore
