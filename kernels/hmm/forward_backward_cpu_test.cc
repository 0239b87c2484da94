// The batched float32 forward-backward against the float64 reference, on a
// batch of utterances of mixed lengths (1, 2, 320 frames) and HMMs with
// states that cannot start and forbidden transitions.
#include "kernels/hmm/forward_backward_cpu.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/hmm/hmm_test_util.h"

namespace gmmscore {
namespace {

TEST(ForwardBackwardCpuTest, MatchesTheReferenceOnABatchOfMixedLengths) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int n : {1, 2, 7, 64}) {
    SCOPED_TRACE(testing::Message() << "N " << n);
    const DenseHmm hmm = RandomDenseHmm(n, 40, rng);
    const MixedLengthBatch batch = RandomMixedLengthBatch(40, rng);
    const std::vector<FloatMatrix>& data = batch.data;
    const std::vector<ConstMatrixView>& views = batch.views;
    auto got = ForwardBackwardCpu(hmm, views);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), data.size());
    for (size_t u = 0; u < data.size(); ++u) {
      SCOPED_TRACE(testing::Message() << "utterance " << u << " of " << data[u].rows() << " frames");
      auto want = ForwardBackwardReference(hmm, views[u]);
      ASSERT_TRUE(want.ok());
      const HmmPosteriors& g = (*got)[u];
      EXPECT_NEAR(g.log_likelihood, want->log_likelihood, 1e-5 * std::fabs(want->log_likelihood));
      EXPECT_THAT(g.gamma, testing::Pointwise(testing::DoubleNear(1e-5), want->gamma));
      for (size_t k = 0; k < want->transition_counts.size(); ++k) {
        EXPECT_NEAR(g.transition_counts[k], want->transition_counts[k], 1e-4 * std::max(1.0, want->transition_counts[k]));
      }
    }
  }
}

TEST(ForwardBackwardCpuTest, ThousandStatesMatchTheReference) {
  // The largest shape: N = 1024 with T in {1, 2, 320} (the
  // reference takes seconds at 320 frames).
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const DenseHmm hmm = RandomDenseHmm(1024, 512, rng);
  std::vector<FloatMatrix> data;
  for (int64_t frames : {1, 2, 320}) data.push_back(RandomLoglikes(frames, 512, rng));
  std::vector<ConstMatrixView> views;
  for (const FloatMatrix& m : data) views.push_back(m.view());
  auto got = ForwardBackwardCpu(hmm, views);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t u = 0; u < data.size(); ++u) {
    auto want = ForwardBackwardReference(hmm, views[u]);
    ASSERT_TRUE(want.ok());
    EXPECT_NEAR((*got)[u].log_likelihood, want->log_likelihood, 1e-5 * std::fabs(want->log_likelihood));
    double worst = 0;
    for (size_t i = 0; i < want->gamma.size(); ++i) worst = std::max(worst, std::abs((*got)[u].gamma[i] - want->gamma[i]));
    EXPECT_LT(worst, 1e-5) << data[u].rows() << " frames";
  }
}

TEST(ForwardBackwardCpuTest, ErrorsNameTheUtterance) {
  const DenseHmm hmm = *MakeDenseHmm({0, 1}, {1.0, 0.0}, {1.0, 0.0, 0.0, 1.0});
  FloatMatrix fine(3, 2, -1.0f), impossible(3, 2, -1.0f), narrow(3, 1);
  impossible.row(1)[0] = -std::numeric_limits<float>::infinity();
  std::vector<ConstMatrixView> views = {fine.view(), impossible.view()};
  absl::Status status = ForwardBackwardCpu(hmm, views).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  views = {fine.view(), narrow.view()};
  status = ForwardBackwardCpu(hmm, views).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  EXPECT_TRUE(ForwardBackwardCpu(hmm, {}).ok());
}

}  // namespace
}  // namespace gmmscore
