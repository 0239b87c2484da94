// Dense HMMs through the CUDA graph recursions: N in {1, 2, 7, 1024} and T
// in {1, 2, 320}, zero initial probabilities and forbidden transitions; as
// graphs (GraphOfDenseHmm, arcs back included) Viterbi gives the float64
// reference's path. Forward-backward of the small ones too; a 1024-state
// dense graph's arc counts (8 MB) do not fit a CTA's shared memory, and
// dense forward-backward has its own DGEMM path (forward_backward_cuda.h,
// tested at 1024 states in forward_backward_cuda_test). Skips without a GPU.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/hmm/cuda/graph_hmm_cuda.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/hmm_test_util.h"
#include "kernels/hmm/sparse_hmm_reference.h"

namespace gmmscore {
namespace {

TEST(DenseGraphCudaTest, ViterbiAndPosteriorsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<HmmGraph> graphs;
  std::vector<FloatMatrix> scores;
  for (int n : {1, 2, 7, 1024}) {
    const DenseHmm hmm = RandomDenseHmm(n, std::max(1, n / 2), rng);
    const absl::StatusOr<HmmGraph> g = GraphOfDenseHmm(hmm);
    ASSERT_TRUE(g.ok()) << g.status();
    for (int64_t frames : {1, 2, 320}) {
      graphs.push_back(*g);
      scores.push_back(GatherColumns(RandomLoglikes(frames, hmm.num_emission_states(), rng).view(), g->columns));
    }
  }
  std::vector<const HmmGraph*> ptrs;
  std::vector<ConstMatrixView> views;
  for (size_t k = 0; k < graphs.size(); ++k) {
    ptrs.push_back(&graphs[k]);
    views.push_back(scores[k].view());
  }
  const auto paths = GraphViterbiCuda(ptrs, views);
  ASSERT_TRUE(paths.ok()) << paths.status();
  const size_t small = 9;  // the graphs of 1, 2 and 7 states come first
  const auto posts = GraphForwardBackwardCuda(absl::MakeSpan(ptrs).first(small), absl::MakeSpan(views).first(small),
                                              {.want_gamma = true});
  ASSERT_TRUE(posts.ok()) << posts.status();
  for (size_t k = 0; k < graphs.size(); ++k) {
    SCOPED_TRACE(testing::Message() << graphs[k].num_states() << " states, " << views[k].rows << " frames");
    const auto want = GraphViterbiReference(graphs[k], views[k]);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(paths->utterances[k].states, want->states);
    if (k >= small) continue;
    const auto want_post = GraphForwardBackwardReference(graphs[k], views[k]);
    ASSERT_TRUE(want_post.ok());
    const GraphPosteriors& got = posts->utterances[k];
    EXPECT_NEAR(got.log_likelihood, want_post->log_likelihood, 1e-9 * std::abs(want_post->log_likelihood));
    double worst = 0;
    for (size_t i = 0; i < want_post->gamma.size(); ++i) worst = std::max(worst, std::abs(got.gamma[i] - want_post->gamma[i]));
    for (size_t a = 0; a < want_post->arc_counts.size(); ++a) {
      worst = std::max(worst, std::abs(got.arc_counts[a] - want_post->arc_counts[a]));
    }
    EXPECT_LT(worst, 1e-6);
  }
}

}  // namespace
}  // namespace gmmscore
