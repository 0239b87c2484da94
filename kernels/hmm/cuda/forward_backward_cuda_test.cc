// The CUDA forward-backward against the float64 reference and the CPU path
// (skipped without a GPU).
#include "kernels/hmm/cuda/forward_backward_cuda.h"

#include <cuda_runtime.h>

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/hmm/hmm_reference.h"
#include "kernels/hmm/hmm_test_util.h"

namespace gmmscore {
namespace {

TEST(ForwardBackwardCudaTest, MatchesTheReferenceOnABatchOfMixedLengths) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int n : {1, 2, 7, 64, 300, 1024}) {
    SCOPED_TRACE(testing::Message() << "N " << n);
    const DenseHmm hmm = RandomDenseHmm(n, 40, rng);
    const MixedLengthBatch batch = RandomMixedLengthBatch(40, rng);
    const std::vector<FloatMatrix>& data = batch.data;
    const std::vector<ConstMatrixView>& views = batch.views;
    auto got = ForwardBackwardCuda(hmm, views);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<double> counts(int64_t{n} * n, 0.0);
    for (size_t u = 0; u < data.size(); ++u) {
      SCOPED_TRACE(testing::Message() << "utterance " << u << " of " << data[u].rows() << " frames");
      auto want = ForwardBackwardReference(hmm, views[u]);
      ASSERT_TRUE(want.ok());
      EXPECT_NEAR(got->log_likelihoods[u], want->log_likelihood, 1e-9 * std::fabs(want->log_likelihood));
      EXPECT_THAT(got->gamma[u], testing::Pointwise(testing::DoubleNear(1e-9), want->gamma));
      for (size_t k = 0; k < counts.size(); ++k) counts[k] += want->transition_counts[k];
    }
    for (size_t k = 0; k < counts.size(); ++k) {
      EXPECT_NEAR(got->transition_counts[k], counts[k], 1e-8 * std::max(1.0, counts[k])) << k;
    }
    auto no_gamma = ForwardBackwardCuda(hmm, views, 0, /*want_gamma=*/false);
    ASSERT_TRUE(no_gamma.ok());
    EXPECT_TRUE(no_gamma->gamma.empty());
    EXPECT_EQ(no_gamma->log_likelihoods, got->log_likelihoods);
  }
}

TEST(ForwardBackwardCudaTest, ErrorsNameTheUtterance) {
  SKIP_WITHOUT_GPU();
  const DenseHmm hmm = *MakeDenseHmm({0, 1}, {1.0, 0.0}, {1.0, 0.0, 0.0, 1.0});
  FloatMatrix fine(3, 2, -1.0f), impossible(5, 2, -1.0f), narrow(3, 1);
  impossible.row(1)[0] = -std::numeric_limits<float>::infinity();
  std::vector<ConstMatrixView> views = {fine.view(), impossible.view()};
  absl::Status status = ForwardBackwardCuda(hmm, views).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  views = {fine.view(), narrow.view()};
  EXPECT_EQ(ForwardBackwardCuda(hmm, views).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ForwardBackwardCuda(hmm, {}).ok());
}

}  // namespace
}  // namespace gmmscore
