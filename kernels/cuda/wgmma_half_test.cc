// The 3xFP16 wgmma kernel where binary16 alone would overflow or underflow:
// a model whose parameters span 1e-9 to 1e8 (column scales), and frames far
// outside any model (per-frame scales), against the float64 reference.
// Runs on compute capability 9.0 only; skips elsewhere and without a GPU.
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/wide_range_model.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

#define SKIP_UNLESS_HOPPER()                                                               \
  SKIP_WITHOUT_GPU();                                                                      \
  {                                                                                        \
    auto info = CurrentDeviceInfo();                                                       \
    ASSERT_TRUE(info.ok()) << info.status();                                               \
    if (info->major != 9 || info->minor != 0) GTEST_SKIP() << "wgmma needs an H100/H200"; \
  }

// wgmma_f16's scores of `features` into a NaN-poisoned buffer, copied back.
FloatMatrix ScoreWithHalves(const DiagGmmModel& model, const FloatMatrix& features) {
  FloatMatrix out(features.rows(), model.num_states(), 0.0f);
  auto resident = DeviceModel::Upload(model);
  EXPECT_TRUE(resident.ok()) << resident.status();
  if (!resident.ok()) return out;
  EXPECT_GT(resident->tc16_cols, 0) << "a compute capability 9.0 device makes the binary16 layout";
  auto d_features = DeviceBuffer<float>::FromHost(features.data(), features.rows() * features.cols());
  auto d_out = DeviceBuffer<float>::Allocate(features.rows() * model.num_states());
  EXPECT_TRUE(d_features.ok() && d_out.ok());
  if (!d_features.ok() || !d_out.ok()) return out;
  EXPECT_EQ(cudaMemset(d_out->data(), 0xFF, d_out->bytes()), cudaSuccess);
  LoglikWorkspace workspace;
  const absl::Status launched = LaunchLoglik(*resident, Algorithm::kWgmmaHalf, d_features->data(),
                                             features.rows(), d_out->data(), workspace, nullptr);
  EXPECT_TRUE(launched.ok()) << launched;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), d_out->data(), d_out->bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

void ExpectWithinBound(const DiagGmmModel& model, const FloatMatrix& features, const char* what) {
  const FloatMatrix scores = ScoreWithHalves(model, features);
  const std::vector<double> reference = ReferenceLogLikelihoods(model, features.view());
  const double error = MaxNormalizedError(scores, reference);
  std::printf("max_error wgmma_f16 %s normalized %.3g abs_within_256 %.3g\n", what, error,
              MaxAbsErrorWithin(scores, reference, kAbsoluteErrorRange));
  EXPECT_LE(error, ErrorBound(Algorithm::kWgmmaHalf)) << what;
}

TEST(WgmmaHalfTest, ParametersAndFramesPastBinary16RangeScoreWithinTheBound) {
  SKIP_UNLESS_HOPPER();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  auto model = WideRangeModel(70, 39, seed);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectWithinBound(*model, GenerateSyntheticFeatures(*model, 300, seed + 1), "wide-range model");
}

TEST(WgmmaHalfTest, FramesFarOutsideTheModelAreScaledPerFrame) {
  SKIP_UNLESS_HOPPER();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  auto model = GenerateSyntheticModel({.num_states = 65, .min_gaussians = 1, .max_gaussians = 40, .dim = 36,
                                       .seed = seed});
  ASSERT_TRUE(model.ok());
  FloatMatrix features = GenerateSyntheticFeatures(*model, 200, seed + 1);
  const int dim = model->dim();
  // Frames 0-9 and 100-109 a thousand times, frame 10 1e5 times as far from
  // the centre; frame 11 one coordinate at 3e4; frame 12 the centre itself.
  auto stretch = [&](int64_t frame, float factor) {
    for (int d = 0; d < dim; ++d) {
      const float c = model->center()[d];
      features.at(frame, d) = c + (features.at(frame, d) - c) * factor;
    }
  };
  for (int64_t t = 0; t < 10; ++t) stretch(t, 1e3f);
  for (int64_t t = 100; t < 110; ++t) stretch(t, 1e3f);
  stretch(10, 1e5f);
  features.at(11, 7) = 3e4f;
  for (int d = 0; d < dim; ++d) features.at(12, d) = model->center()[d];
  ExpectWithinBound(*model, features, "outlier frames");
}

}  // namespace
}  // namespace gmmscore
