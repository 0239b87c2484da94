// CUDA backend and kernels against the float64 reference. Skips where no
// CUDA device answers (CI); runs for real on the GPU machine
// (tools/gpu_check.sh).
#include "kernels/cuda/cuda_backend.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend_fixture.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/state_select_launch.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/fused_batch_check.h"
#include "kernels/score/reference_scorer.h"
#include "kernels/score/selected_batch_check.h"
#include "kernels/score/transformed_batch_check.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

struct Shape {
  int states, min_gaussians, max_gaussians, dim;
};

std::string ShapeName(const Shape& s) {
  char name[96];
  std::snprintf(name, sizeof(name), "S%d_G%dto%d_D%d", s.states, s.min_gaussians, s.max_gaussians, s.dim);
  return name;
}

// Runs one algorithm through the launch API into a NaN-poisoned device
// buffer (0xFF bytes are NaN), so any element the kernel fails to write shows.
absl::StatusOr<FloatMatrix> LaunchPoisoned(const DeviceModel& resident, Algorithm algorithm,
                                           const FloatMatrix& features, cudaStream_t stream,
                                           LoglikWorkspace& workspace) {
  const int64_t frames = features.rows();
  auto d_features = DeviceBuffer<float>::FromHost(features.data(), frames * features.cols());
  if (!d_features.ok()) return d_features.status();
  auto d_out = DeviceBuffer<float>::Allocate(frames * resident.num_states);
  if (!d_out.ok()) return d_out.status();
  if (cudaMemset(d_out->data(), 0xFF, d_out->bytes()) != cudaSuccess) return absl::InternalError("memset");
  absl::Status status = LaunchLoglik(resident, algorithm, d_features->data(), frames, d_out->data(),
                                     workspace, stream);
  if (!status.ok()) return status;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return absl::InternalError("kernel failed");
  FloatMatrix out(frames, resident.num_states);
  if (cudaMemcpy(out.data(), d_out->data(), d_out->bytes(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    return absl::InternalError("copy back");
  }
  return out;
}

class CudaKernelShapesTest : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaKernelShapesTest, EveryAlgorithmMatchesFloat64Reference) {
  SKIP_WITHOUT_GPU();
  const Shape shape = GetParam();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "model seed " << seed);
  auto model = GenerateSyntheticModel({.num_states = shape.states, .min_gaussians = shape.min_gaussians,
                                       .max_gaussians = shape.max_gaussians, .dim = shape.dim, .seed = seed});
  ASSERT_TRUE(model.ok()) << model.status();
  auto resident = DeviceModel::Upload(*model);
  ASSERT_TRUE(resident.ok()) << resident.status();
  auto stream = CudaStream::Create();
  auto cublas = CublasHandle::Create();
  ASSERT_TRUE(stream.ok() && cublas.ok());
  LoglikWorkspace workspace;
  workspace.cublas = cublas->get();

  // 130: wgmma's second 128-frame tile has 2 frames, its second warpgroup none.
  for (int64_t frames : {1, 7, 8, 9, 16, 100, 130, 1000}) {
    const FloatMatrix features = GenerateSyntheticFeatures(*model, frames, seed + frames);
    const std::vector<double> reference = ReferenceLogLikelihoods(*model, features.view());
    for (Algorithm algorithm : {Algorithm::kFused8, Algorithm::kFused16, Algorithm::kFused32, Algorithm::kFused8x2,
                                Algorithm::kFused8x4, Algorithm::kSplit8, Algorithm::kTf32x3, Algorithm::kWgmma,
                                Algorithm::kWgmmaHalf, Algorithm::kGemm, Algorithm::kAuto}) {
      auto scores = LaunchPoisoned(*resident, algorithm, features, stream->get(), workspace);
      ASSERT_TRUE(scores.ok()) << scores.status();
      const double error = MaxNormalizedError(*scores, reference);
      std::printf("max_error %-8s %-18s T=%-5lld normalized %.3g abs %.3g abs_within_256 %.3g\n",
                  std::string(AlgorithmName(algorithm)).c_str(), ShapeName(shape).c_str(),
                  static_cast<long long>(frames), error, MaxAbsError(*scores, reference),
                  MaxAbsErrorWithin(*scores, reference, kAbsoluteErrorRange));
      EXPECT_LE(error, ErrorBound(algorithm)) << AlgorithmName(algorithm) << " " << ShapeName(shape) << " T=" << frames;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AwkwardShapes, CudaKernelShapesTest,
    // 5 and 7 Gaussians a block: fused8x4's last group has 1 and 3 members
    // (odd and even quads of dimensions). Dimensions 25 and 33 have 7 and 9
    // k-steps of tensor-core columns, run by the tensor-core kernels' 8- and
    // 10-step instances (the steps past the model's columns skipped).
    // Dimensions 5, 20 and 45 reach wgmma_f16's 2-step instance with one
    // step of columns, its 3-step and its 6-step instances (45: the TF32
    // kernels' 12-step ones too).
    ::testing::Values(Shape{1, 1, 1, 13}, Shape{63, 1, 1, 36}, Shape{65, 16, 16, 39}, Shape{130, 1, 256, 40},
                      Shape{257, 1, 32, 13}, Shape{300, 32, 32, 39}, Shape{97, 5, 70, 36}, Shape{65, 5, 5, 36},
                      Shape{64, 7, 7, 39}, Shape{70, 3, 9, 25}, Shape{50, 2, 40, 33}, Shape{40, 3, 12, 5},
                      Shape{45, 4, 20, 20}, Shape{33, 2, 36, 45}),
    [](const auto& info) { return ShapeName(info.param); });

class CudaBackendTest : public CudaBackendFixture {};

TEST_F(CudaBackendTest, SeveralResidentModelsScoreCorrectlyInTurn) {
  std::vector<std::shared_ptr<const PreparedModel>> models = {
      Prepare({.num_states = 70, .min_gaussians = 1, .max_gaussians = 20, .dim = 39, .seed = 1}),
      Prepare({.num_states = 33, .min_gaussians = 4, .max_gaussians = 4, .dim = 13, .seed = 2}),
      Prepare({.num_states = 129, .min_gaussians = 2, .max_gaussians = 9, .dim = 40, .seed = 3})};
  for (int round = 0; round < 3; ++round) {
    for (size_t m = 0; m < models.size(); ++m) {
      const DiagGmmModel& model = models[m]->model();
      EXPECT_GT(models[m]->device_bytes(), model.num_gaussians() * model.dim() * 8);
      const FloatMatrix features = GenerateSyntheticFeatures(model, 17 + 30 * round, 100 + m);
      ScoreResult result;
      result.loglikes = FloatMatrix(features.rows(), model.num_states(), NAN);
      ASSERT_TRUE(backend_->Score(*models[m], features.view(), {}, &result).ok());
      const std::vector<double> reference = ReferenceLogLikelihoods(model, features.view());
      EXPECT_LE(MaxNormalizedError(result.loglikes, reference), ErrorBound(Algorithm::kAuto));
      // Frame totals against the float64 log-sum-exp of the reference.
      ASSERT_EQ(result.frame_totals.size(), static_cast<size_t>(features.rows()));
      for (int64_t t = 0; t < features.rows(); ++t) {
        double max = -INFINITY, sum = 0.0;
        for (int s = 0; s < model.num_states(); ++s) max = std::max(max, reference[t * model.num_states() + s]);
        for (int s = 0; s < model.num_states(); ++s) sum += std::exp(reference[t * model.num_states() + s] - max);
        const double total = max + std::log(sum);
        EXPECT_NEAR(result.frame_totals[t], total,
                    ErrorBound(Algorithm::kGemm) * std::max(1.0, std::abs(total) / kAbsoluteErrorRange));
      }
    }
  }
}

TEST_F(CudaBackendTest, EmptyWindowAndNoTotals) {
  auto prepared = Prepare({.num_states = 5, .dim = 13});
  ScoreResult result;
  FloatMatrix none(0, 13);
  ASSERT_TRUE(backend_->Score(*prepared, none.view(), {}, &result).ok());
  EXPECT_EQ(result.loglikes.rows(), 0);
  const FloatMatrix features = GenerateSyntheticFeatures(prepared->model(), 3, 1);
  ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.frame_totals = false}, &result).ok());
  EXPECT_TRUE(result.frame_totals.empty());
  EXPECT_EQ(result.loglikes.rows(), 3);
}

TEST_F(CudaBackendTest, BadInputIsRejectedAndTheBackendCarriesOn) {
  auto prepared = Prepare({.num_states = 10, .dim = 39});
  FloatMatrix features = GenerateSyntheticFeatures(prepared->model(), 8, 5);
  features.at(3, 20) = NAN;
  ScoreResult result;
  absl::Status status = backend_->Score(*prepared, features.view(), {}, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("frame 3, dimension 20"));
  FloatMatrix wrong(4, 36);
  EXPECT_EQ(backend_->Score(*prepared, wrong.view(), {}, &result).code(), absl::StatusCode::kInvalidArgument);
  features.at(3, 20) = 1.0f;
  EXPECT_TRUE(backend_->Score(*prepared, features.view(), {}, &result).ok());
}

TEST_F(CudaBackendTest, ConcurrentCallersGetTheirOwnAnswers) {
  auto prepared = Prepare({.num_states = 200, .min_gaussians = 8, .max_gaussians = 24, .dim = 39, .seed = 9});
  const DiagGmmModel& model = prepared->model();
  std::vector<FloatMatrix> inputs;
  std::vector<ScoreResult> expected(12);
  for (int i = 0; i < 12; ++i) {
    inputs.push_back(GenerateSyntheticFeatures(model, 10 + 7 * i, 50 + i));
    ASSERT_TRUE(backend_->Score(*prepared, inputs[i].view(), {}, &expected[i]).ok());
  }
  std::vector<std::thread> threads;
  std::vector<int> mismatches(12, 0);
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 20; ++round) {
        ScoreResult result;
        if (!backend_->Score(*prepared, inputs[i].view(), {}, &result).ok() ||
            !(result.loglikes == expected[i].loglikes)) {
          ++mismatches[i];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(mismatches[i], 0) << "caller " << i;
}

TEST_F(CudaBackendTest, BlockedKernelsSliceGaussiansOfAShortLaunch) {
  // 300 states of 1 to 130 Gaussians, sorted into 5 state blocks: a
  // 100-frame window is 13 tiles x 5 blocks, a tenth of a wave on an H100
  // or H200, so the blocked kernels cut each block's Gaussians into 4
  // slices (fewer on a GPU of fewer SMs). The last state block's states have
  // the fewest Gaussians: its slices are short, and under fused8x4 one of
  // them is empty (seed 77) and must merge as nothing.
  auto prepared = Prepare({.num_states = 300, .min_gaussians = 1, .max_gaussians = 130, .dim = 39, .seed = 77});
  const DiagGmmModel& model = prepared->model();
  auto device = CurrentDeviceInfo();
  ASSERT_TRUE(device.ok()) << device.status();
  const int64_t frames = 100;
  const int64_t blocks = (frames + 7) / 8 * ((model.num_states() + 63) / 64);
  const int slices = ChooseBlockedSlices(blocks, int64_t{device->sms} * Fused8x4Policy::kMinBlocksPerSm,
                                         (model.max_gaussians_per_state() + 3) / 4, frames * model.num_states());
  if (device->sms >= 100) ASSERT_EQ(slices, 4) << device->sms << " SMs";
  if (slices == 1) GTEST_SKIP() << "this window is not sliced on " << device->sms << " SMs";
  const FloatMatrix features = GenerateSyntheticFeatures(model, frames, 78);
  const std::vector<double> reference = ReferenceLogLikelihoods(model, features.view());
  for (Algorithm algorithm : {Algorithm::kFused8x2, Algorithm::kFused8x4}) {
    ScoreResult result;
    result.loglikes = FloatMatrix(frames, model.num_states(), NAN);
    ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.algorithm = algorithm}, &result).ok());
    EXPECT_LE(MaxNormalizedError(result.loglikes, reference), ErrorBound(algorithm)) << AlgorithmName(algorithm);
  }
}

TEST_F(CudaBackendTest, GemmPathSlicesLongWindows) {
  // 600k Gaussians: the 1 GiB score scratch holds ~447 frames, so 1000
  // frames run in three slices.
  auto prepared = Prepare({.num_states = 2400, .min_gaussians = 250, .max_gaussians = 250, .dim = 36, .seed = 4});
  const DiagGmmModel& model = prepared->model();
  const FloatMatrix features = GenerateSyntheticFeatures(model, 1000, 8);
  ScoreResult gemm, fused, blocked, blocked4;
  ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.algorithm = Algorithm::kGemm}, &gemm).ok());
  ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.algorithm = Algorithm::kFused16}, &fused).ok());
  // 250 Gaussians per state: fused8x2's pairs all full, fused8x4's last
  // group half empty.
  ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.algorithm = Algorithm::kFused8x2}, &blocked).ok());
  ASSERT_TRUE(backend_->Score(*prepared, features.view(), {.algorithm = Algorithm::kFused8x4}, &blocked4).ok());
  for (int64_t t : {0, 446, 447, 448, 894, 895, 999}) {
    const std::vector<double> reference = ReferenceLogLikelihoods(model, features.view().Rows(t, 1));
    for (int s = 0; s < model.num_states(); ++s) {
      const double scale = std::max(1.0, std::abs(reference[s]) / kAbsoluteErrorRange);
      ASSERT_NEAR(gemm.loglikes.at(t, s), reference[s], scale * ErrorBound(Algorithm::kGemm))
          << "frame " << t << " state " << s;
      ASSERT_NEAR(fused.loglikes.at(t, s), reference[s], scale * ErrorBound(Algorithm::kFused16))
          << "frame " << t << " state " << s;
      ASSERT_NEAR(blocked.loglikes.at(t, s), reference[s], scale * ErrorBound(Algorithm::kFused8x2))
          << "fused8x2 frame " << t << " state " << s;
      ASSERT_NEAR(blocked4.loglikes.at(t, s), reference[s], scale * ErrorBound(Algorithm::kFused8x4))
          << "fused8x4 frame " << t << " state " << s;
    }
  }
}

TEST_F(CudaBackendTest, BatchOfModelsMatchesEachAloneInOneLaunchOrMany) {
  std::vector<std::shared_ptr<const PreparedModel>> models = {
      Prepare({.num_states = 70, .min_gaussians = 1, .max_gaussians = 20, .dim = 39, .seed = 11}),
      Prepare({.num_states = 33, .min_gaussians = 4, .max_gaussians = 4, .dim = 13, .seed = 12}),
      Prepare({.num_states = 129, .min_gaussians = 2, .max_gaussians = 9, .dim = 40, .seed = 13})};
  // Uneven windows, one empty; the same model twice.
  const std::vector<std::pair<int, int64_t>> windows = {{0, 10}, {1, 1}, {2, 37}, {0, 0}, {2, 8}, {1, 100}};
  std::vector<FloatMatrix> features;
  for (size_t w = 0; w < windows.size(); ++w) {
    features.push_back(GenerateSyntheticFeatures(models[windows[w].first]->model(), windows[w].second, 70 + w));
  }
  for (Algorithm algorithm :
       {Algorithm::kAuto, Algorithm::kSplit8, Algorithm::kFused16, Algorithm::kFused8x2, Algorithm::kGemm}) {
    std::vector<ScoreResult> results(windows.size());
    std::vector<ScoreWindow> jobs;
    for (size_t w = 0; w < windows.size(); ++w) {
      results[w].loglikes = FloatMatrix(windows[w].second, models[windows[w].first]->model().num_states(), NAN);
      jobs.push_back({models[windows[w].first].get(), features[w].view(), &results[w]});
    }
    ASSERT_TRUE(backend_->ScoreBatch(jobs, {.algorithm = algorithm}).ok()) << AlgorithmName(algorithm);
    for (size_t w = 0; w < windows.size(); ++w) {
      const DiagGmmModel& model = models[windows[w].first]->model();
      ASSERT_EQ(results[w].loglikes.rows(), windows[w].second);
      ASSERT_EQ(results[w].frame_totals.size(), static_cast<size_t>(windows[w].second));
      EXPECT_LE(MaxNormalizedError(results[w].loglikes, ReferenceLogLikelihoods(model, features[w].view())),
                ErrorBound(algorithm))
          << AlgorithmName(algorithm) << " window " << w;
    }
  }
  // A bad window fails the whole batch before any work, with its message.
  FloatMatrix wrong(4, 12);
  ScoreResult result;
  std::vector<ScoreWindow> bad = {{models[0].get(), features[0].view(), &result}, {models[1].get(), wrong.view(), &result}};
  EXPECT_THAT(backend_->ScoreBatch(bad, {}).message(), HasSubstr("dimension 12"));
}

// A scheduler's batch: many streams' uneven chunks of one model, scored as
// one run (one launch over all frames), each window getting its own rows.
TEST_F(CudaBackendTest, ManyChunksOfOneModelScoreAsOneRun) {
  auto prepared = Prepare({.num_states = 300, .min_gaussians = 1, .max_gaussians = 24, .dim = 39, .seed = 41});
  std::mt19937 random(5);
  std::vector<FloatMatrix> features;
  for (int w = 0; w < 64; ++w) {
    features.push_back(GenerateSyntheticFeatures(prepared->model(), 1 + random() % 50, 500 + w));
  }
  for (Algorithm algorithm :
       {Algorithm::kAuto, Algorithm::kFused8, Algorithm::kFused8x2, Algorithm::kFused8x4, Algorithm::kSplit8}) {
    std::vector<ScoreResult> results(features.size());
    std::vector<ScoreWindow> jobs;
    for (size_t w = 0; w < features.size(); ++w) {
      results[w].loglikes = FloatMatrix(features[w].rows(), 300, NAN);
      jobs.push_back({prepared.get(), features[w].view(), &results[w]});
    }
    ASSERT_TRUE(backend_->ScoreBatch(jobs, {.algorithm = algorithm}).ok()) << AlgorithmName(algorithm);
    for (size_t w = 0; w < features.size(); ++w) {
      const std::vector<double> reference = ReferenceLogLikelihoods(prepared->model(), features[w].view());
      EXPECT_LE(MaxNormalizedError(results[w].loglikes, reference), ErrorBound(algorithm))
          << AlgorithmName(algorithm) << " window " << w;
      ASSERT_EQ(results[w].frame_totals.size(), static_cast<size_t>(features[w].rows()));
      const std::vector<float> totals = ComputeFrameTotals(results[w].loglikes);
      for (int64_t t = 0; t < features[w].rows(); ++t) {
        EXPECT_NEAR(results[w].frame_totals[t], totals[t], 1e-3 * std::max(1.0f, std::abs(totals[t])))
            << "window " << w << " frame " << t;
      }
    }
  }
}

// Per-model precision: a kFast window of >= 64 frames on a model of 32
// Gaussians a state takes the wgmma_f16 path on an H100/H200 (its float32
// rounding differs from the exact kernels', so the answers are not bitwise
// equal there) and stays within the fast bound; kExact windows of the same
// model in the same batch stay exact; elsewhere kFast scores like kExact.
TEST_F(CudaBackendTest, FastPrecisionWindowsUseTensorCoresWhereTheyWin) {
  auto prepared = Prepare({.num_states = 200, .min_gaussians = 32, .max_gaussians = 32, .dim = 39, .seed = 77});
  const FloatMatrix features = GenerateSyntheticFeatures(prepared->model(), 300, 78);
  const std::vector<double> reference = ReferenceLogLikelihoods(prepared->model(), features.view());
  std::vector<ScoreResult> results(4);
  std::vector<ScoreWindow> jobs;
  for (int w = 0; w < 4; ++w) {
    results[w].loglikes = FloatMatrix(features.rows(), 200, NAN);
    const Precision precision = w % 2 == 0 ? Precision::kFast : Precision::kExact;
    jobs.push_back({prepared.get(), features.view(), &results[w], nullptr, precision});
  }
  ASSERT_TRUE(backend_->ScoreBatch(jobs, {}).ok());
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  const bool hopper = major == 9 && minor == 0;
  for (int w = 0; w < 4; ++w) {
    const bool fast = w % 2 == 0;
    const double error = MaxNormalizedError(results[w].loglikes, reference);
    std::printf("max_error %-8s %-18s T=%-5lld normalized %.3g abs %.3g abs_within_256 %.3g\n",
                fast ? "prec-fast" : "prec-exact", "S200_G32to32_D39", static_cast<long long>(features.rows()), error,
                MaxAbsError(results[w].loglikes, reference),
                MaxAbsErrorWithin(results[w].loglikes, reference, kAbsoluteErrorRange));
    EXPECT_LE(error, ErrorBound(fast && hopper ? Algorithm::kWgmmaHalf : Algorithm::kFused8x2)) << "window " << w;
  }
  const bool same = std::memcmp(results[0].loglikes.data(), results[1].loglikes.data(),
                                features.rows() * 200 * sizeof(float)) == 0;
  EXPECT_EQ(same, !hopper) << "fast and exact windows should differ exactly where wgmma runs";
  // The same precision gives the same bits.
  EXPECT_EQ(std::memcmp(results[0].loglikes.data(), results[2].loglikes.data(), features.rows() * 200 * sizeof(float)), 0);

  // An explicit algorithm overrides the precision.
  std::vector<ScoreResult> forced(2);
  std::vector<ScoreWindow> forced_jobs;
  for (int w = 0; w < 2; ++w) {
    forced[w].loglikes = FloatMatrix(features.rows(), 200, NAN);
    forced_jobs.push_back({prepared.get(), features.view(), &forced[w], nullptr,
                           w == 0 ? Precision::kFast : Precision::kExact});
  }
  ASSERT_TRUE(backend_->ScoreBatch(forced_jobs, {.algorithm = Algorithm::kFused16}).ok());
  EXPECT_EQ(std::memcmp(forced[0].loglikes.data(), forced[1].loglikes.data(), features.rows() * 200 * sizeof(float)), 0);
  // On an H100/H200 the fast windows are wgmma_f16's own bits.
  if (hopper) {
    ASSERT_TRUE(backend_->ScoreBatch(forced_jobs, {.algorithm = Algorithm::kWgmmaHalf}).ok());
    EXPECT_EQ(std::memcmp(forced[0].loglikes.data(), results[0].loglikes.data(), features.rows() * 200 * sizeof(float)),
              0);
  }
}

// The speaker transform runs on the device, before every algorithm.
TEST_F(CudaBackendTest, BatchWithSpeakerTransformsMatchesFloat64Reference) {
  for (Algorithm algorithm :
       {Algorithm::kAuto, Algorithm::kSplit8, Algorithm::kFused16, Algorithm::kFused8x2, Algorithm::kGemm}) {
    SCOPED_TRACE(std::string(AlgorithmName(algorithm)));
    ExpectTransformedBatchMatchesReference(*backend_, {.algorithm = algorithm}, ErrorBound(algorithm));
  }
}

// Fusion on the device (FuseOnLane, LaunchFusion) for every method, with
// fused-only and full answers in one call.
TEST_F(CudaBackendTest, FusedBatchMatchesFloat64Reference) {
  ExpectFusedBatchMatchesReference(*backend_, ErrorBound(Algorithm::kAuto));
}

// top_k below the state count selected on the device (DeviceSelection,
// LaunchStateSelect): exactly what SelectStates keeps; beams alone dense.
TEST_F(CudaBackendTest, SelectedWindowsMatchTheHostSelection) {
  ExpectSelectedBatchMatchesHostSelection(*backend_, ErrorBound(Algorithm::kAuto), /*selects_top_k=*/true);
}

// The selection kernel alone on scores no model gives: coarse values with
// long runs of ties, -0 beside +0, -inf, rows all -inf and a row of one
// value, in segments of several sizes; slots are poisoned, counts too.
TEST(CudaStateSelectTest, KernelKeepsWhatSelectStatesKeeps) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> grid(-12, 12);
  struct Case {
    int rows, states;
    StateSelection keep;
  };
  const std::vector<Case> cases = {{3, 1, {.top_k = 1}},        {4, 300, {.top_k = 17}},
                                   {5, 5003, {.top_k = 100}},   {2, 5003, {.beam = 1.5f, .top_k = 900}},
                                   {3, 700, {.beam = 0.25f, .top_k = 3}}, {2, 257, {.top_k = 257}},
                                   {4, 4100, {.top_k = 4099}},
                                   // Fewer within the beam than k: all of them, ties at the floor included.
                                   {3, 300, {.beam = 1.0f, .top_k = 299}}};
  std::vector<FloatMatrix> scores;
  std::vector<SelectSegment> segments;
  int64_t rows = 0, slots = 0, values = 0;
  for (const Case& c : cases) {
    FloatMatrix m(c.rows, c.states);
    for (int64_t t = 0; t < c.rows; ++t) {
      for (int s = 0; s < c.states; ++s) {
        const int v = grid(rng);
        m.at(t, s) = v == -12 ? -INFINITY : v == 0 ? (s % 2 ? -0.0f : 0.0f) : 0.25f * v;
      }
    }
    for (int s = 0; s < c.states; ++s) m.at(0, s) = -INFINITY;
    if (c.rows > 1) {
      for (int s = 0; s < c.states; ++s) m.at(1, s) = -3.0f;
    }
    SelectSegment segment;
    segment.first_row = rows;
    segment.scores_offset = values;
    segment.slots_offset = slots;
    segment.rows = c.rows;
    segment.states = c.states;
    segment.top_k = std::min(c.keep.top_k, c.states);
    segment.beam = c.keep.beam;
    segments.push_back(segment);
    rows += c.rows;
    slots += int64_t{c.rows} * segment.top_k;
    values += int64_t{c.rows} * c.states;
    scores.push_back(std::move(m));
  }
  std::vector<float> packed;
  for (const FloatMatrix& m : scores) packed.insert(packed.end(), m.data(), m.data() + m.rows() * m.cols());
  auto d_scores = DeviceBuffer<float>::FromHost(packed.data(), packed.size());
  auto d_segments = DeviceBuffer<SelectSegment>::FromHost(segments.data(), segments.size());
  auto d_counts = DeviceBuffer<int32_t>::Allocate(rows);
  auto d_ids = DeviceBuffer<uint32_t>::Allocate(slots);
  auto d_values = DeviceBuffer<float>::Allocate(slots);
  ASSERT_TRUE(d_scores.ok() && d_segments.ok() && d_counts.ok() && d_ids.ok() && d_values.ok());
  ASSERT_EQ(cudaMemset(d_counts->data(), 0xFF, d_counts->bytes()), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_ids->data(), 0xFF, d_ids->bytes()), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_values->data(), 0xFF, d_values->bytes()), cudaSuccess);
  auto stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(LaunchStateSelect(d_segments->data(), static_cast<int>(segments.size()), rows, d_scores->data(),
                                d_counts->data(), d_ids->data(), d_values->data(), stream->get())
                  .ok());
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<int32_t> counts(rows);
  std::vector<uint32_t> ids(slots);
  std::vector<float> kept_values(slots);
  ASSERT_EQ(cudaMemcpy(counts.data(), d_counts->data(), d_counts->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ids.data(), d_ids->data(), d_ids->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(kept_values.data(), d_values->data(), d_values->bytes(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (size_t c = 0; c < cases.size(); ++c) {
    const SelectSegment& segment = segments[c];
    const SparseScores want = SelectStates(scores[c].view(), cases[c].keep);
    for (int t = 0; t < segment.rows; ++t) {
      SCOPED_TRACE(testing::Message() << "case " << c << " (" << segment.states << " states, top " << segment.top_k
                                      << ", beam " << segment.beam << "), frame " << t);
      const int64_t slot = segment.slots_offset + int64_t{t} * segment.top_k;
      const int count = counts[segment.first_row + t];
      const std::vector<uint32_t> want_ids(want.state_ids.begin() + want.frame_offsets[t],
                                           want.state_ids.begin() + want.frame_offsets[t + 1]);
      ASSERT_EQ(count, static_cast<int>(want_ids.size()));
      EXPECT_EQ(std::vector<uint32_t>(ids.begin() + slot, ids.begin() + slot + count), want_ids);
      for (int i = 0; i < count; ++i) {
        const float want_value = want.values[want.frame_offsets[t] + i];
        EXPECT_EQ(std::memcmp(&kept_values[slot + i], &want_value, sizeof(float)), 0) << "kept value " << i;
      }
    }
  }
}

TEST_F(CudaBackendTest, ForeignModelIsRejected) {
  class OtherModel : public PreparedModel {
   public:
    explicit OtherModel(std::shared_ptr<const DiagGmmModel> model) : PreparedModel(std::move(model)) {}
    int64_t device_bytes() const override { return 0; }
  };
  auto model = GenerateSyntheticModel({.num_states = 3, .dim = 13});
  ASSERT_TRUE(model.ok());
  OtherModel other(std::make_shared<const DiagGmmModel>(std::move(*model)));
  FloatMatrix features(2, 13, 1.0f);
  ScoreResult result;
  EXPECT_EQ(backend_->Score(other, features.view(), {}, &result).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudaBackendCreateTest, MissingDeviceIsUnavailable) {
  auto backend = CreateCudaBackend(CudaDeviceCount() + 3);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gmmscore

// --- tied-mixture models (ScoringBackend::PrepareTied) -----------------------
// The same random tied models as the CPU backend's tests
// (kernels/cpu/cpu_backend_tied_test.cc), against the float64 reference, and
// against the CPU backend.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tied_mixture_reference.h"
#include "kernels/cpu/tied_mixture_test_util.h"
#include "kernels/score/feature_transform.h"

namespace gmmscore {
namespace {

constexpr double kCudaTiedBound = 2e-3;  // as the CPU scorer's

TEST(CudaTiedBackendTest, MatchesFloat64ReferenceAndCpu) {
  SKIP_WITHOUT_GPU();
  auto gpu = CreateCudaBackend(0);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({.num_threads = 2});
  for (const RandomTiedSpec& spec :
       {RandomTiedSpec{},  // 3 streams, codebooks of 1..20 states (SGEMM and small-codebook mixes), starving states
        RandomTiedSpec{.streams = {{0, 12}, {12, 24}, {36, 3}, {39, 12}}, .states_per_codebook = {40}, .sizes = {64},
                       .seed = 2},
        RandomTiedSpec{.streams = {{0, 39}}, .states_per_codebook = {1, 1, 2, 30, 16, 15}, .sizes = {8, 16, 128},
                       .weighted_streams = false, .seed = 3}}) {
    const auto model = RandomTiedModel(spec);
    auto prepared = (*gpu)->PrepareTied(model);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    EXPECT_TRUE((*prepared)->tied());
    EXPECT_GT((*prepared)->device_bytes(), 0);
    auto on_cpu = cpu->PrepareTied(model);
    ASSERT_TRUE(on_cpu.ok());
    const std::vector<int> starving = StarvingTiedStates(*model, spec);
    for (int64_t frames : {1, 7, 100, 1000}) {
      const FloatMatrix features = RandomTiedFeatures(frames, model->dim(), 50 + frames);
      ScoreResult result, expected;
      ASSERT_TRUE((*gpu)->Score(**prepared, features.view(), {}, &result).ok());
      ASSERT_TRUE(cpu->Score(**on_cpu, features.view(), {}, &expected).ok());
      const std::vector<double> reference = TiedMixtureReferenceLogLikelihoods(*model, features.view());
      const double error = MaxTiedError(result.loglikes, reference);
      std::printf("cuda tied, %d streams, %lld frames: max normalized error %.3g nats\n", model->num_streams(),
                  static_cast<long long>(frames), error);
      EXPECT_LT(error, kCudaTiedBound);
      for (int s : starving) {
        for (int64_t t = 0; t < frames; ++t) ASSERT_TRUE(std::isfinite(result.loglikes.at(t, s)));
      }
      ASSERT_EQ(result.frame_totals.size(), static_cast<size_t>(frames));
      for (int64_t t = 0; t < frames; ++t) {
        EXPECT_NEAR(result.frame_totals[t], expected.frame_totals[t],
                    kCudaTiedBound * std::max(1.0f, std::abs(expected.frame_totals[t]) / 256.0f));
      }
    }
  }
}

TEST(CudaTiedBackendTest, BatchMixesTiedAndUntiedWindowsWithTransforms) {
  SKIP_WITHOUT_GPU();
  auto gpu = CreateCudaBackend(0);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const auto tied_a = RandomTiedModel({.seed = 31});
  const auto tied_b = RandomTiedModel({.streams = {{0, 20}, {20, 19}}, .states_per_codebook = {2, 18}, .seed = 32});
  auto untied = GenerateSyntheticModel({.num_states = 40, .min_gaussians = 2, .max_gaussians = 9, .dim = 39, .seed = 33});
  ASSERT_TRUE(untied.ok());
  const auto untied_model = std::make_shared<const DiagGmmModel>(*std::move(untied));
  auto a = (*gpu)->PrepareTied(tied_a);
  auto b = (*gpu)->PrepareTied(tied_b);
  auto u = (*gpu)->Prepare(untied_model);
  ASSERT_TRUE(a.ok() && b.ok() && u.ok());
  std::vector<float> values(39 * 40, 0.0f);
  for (int i = 0; i < 39; ++i) {
    values[i * 40 + i] = 1.0f + 0.01f * (i % 3);
    values[i * 40 + (i + 1) % 39] = 0.02f;
    values[i * 40 + 39] = 0.1f * (i % 5);
  }
  auto transform = FeatureTransform::Create(39, 40, values);
  ASSERT_TRUE(transform.ok()) << transform.status();
  const std::vector<FloatMatrix> features = {RandomTiedFeatures(30, 39, 1), RandomTiedFeatures(11, 39, 2),
                                             RandomTiedFeatures(7, 39, 3), RandomTiedFeatures(25, 39, 4),
                                             RandomTiedFeatures(0, 39, 5), RandomTiedFeatures(9, 39, 6)};
  std::vector<ScoreResult> results(features.size());
  const std::vector<ScoreWindow> windows = {
      {a->get(), features[0].view(), &results[0], &*transform},
      {a->get(), features[1].view(), &results[1], nullptr},
      {u->get(), features[2].view(), &results[2], &*transform},
      {b->get(), features[3].view(), &results[3], &*transform},
      {b->get(), features[4].view(), &results[4], nullptr},
      {u->get(), features[5].view(), &results[5], nullptr}};
  ASSERT_TRUE((*gpu)->ScoreBatch(windows, {}).ok());
  FloatMatrix transformed;
  ASSERT_TRUE(transform->Apply(features[0].view(), &transformed).ok());
  EXPECT_LT(MaxTiedError(results[0].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_a, transformed.view())),
            kCudaTiedBound);
  EXPECT_LT(MaxTiedError(results[1].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_a, features[1].view())),
            kCudaTiedBound);
  ASSERT_TRUE(transform->Apply(features[2].view(), &transformed).ok());
  EXPECT_LT(MaxNormalizedError(results[2].loglikes, ReferenceLogLikelihoods(*untied_model, transformed.view())), 1e-3);
  ASSERT_TRUE(transform->Apply(features[3].view(), &transformed).ok());
  EXPECT_LT(MaxTiedError(results[3].loglikes, TiedMixtureReferenceLogLikelihoods(*tied_b, transformed.view())),
            kCudaTiedBound);
  EXPECT_EQ(results[4].loglikes.rows(), 0);
  EXPECT_EQ(results[4].loglikes.cols(), tied_b->num_states());
  EXPECT_LT(MaxNormalizedError(results[5].loglikes, ReferenceLogLikelihoods(*untied_model, features[5].view())), 1e-3);
  for (size_t w = 0; w < features.size(); ++w) {
    EXPECT_EQ(results[w].frame_totals.size(), static_cast<size_t>(features[w].rows())) << "window " << w;
  }
}

TEST(CudaTiedBackendTest, RejectsBadInput) {
  SKIP_WITHOUT_GPU();
  auto gpu = CreateCudaBackend(0);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ((*gpu)->PrepareTied(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  auto prepared = (*gpu)->PrepareTied(RandomTiedModel({}));
  ASSERT_TRUE(prepared.ok());
  ScoreResult result;
  FloatMatrix narrow(3, 13, 1.0f);
  EXPECT_EQ((*gpu)->Score(**prepared, narrow.view(), {}, &result).code(), absl::StatusCode::kInvalidArgument);
  // A model the CPU backend prepared is foreign here.
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({.num_threads = 1});
  auto on_cpu = cpu->PrepareTied(RandomTiedModel({}));
  ASSERT_TRUE(on_cpu.ok());
  FloatMatrix features = RandomTiedFeatures(2, 39, 1);
  EXPECT_EQ((*gpu)->Score(**on_cpu, features.view(), {}, &result).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
