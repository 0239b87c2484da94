// The fast CPU graph recursions against the float64 reference: random
// graphs of 1 to 1024 states and 1 to 320 frames in one batch over a
// thread pool, results in order; an utterance without a path fails alone.
#include "kernels/hmm/sparse_hmm_cpu.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/hmm/graph_test_util.h"

namespace gmmscore {
namespace {

struct Batch {
  std::vector<HmmGraph> graphs;
  std::vector<FloatMatrix> data;
  std::vector<const HmmGraph*> graph_ptrs;
  std::vector<ConstMatrixView> views;
};

Batch RandomBatch(std::mt19937_64& rng) {
  Batch batch;
  for (int32_t n : {1, 2, 7, 1024, 300}) {
    for (int64_t frames : {1, 2, 320}) {
      batch.graphs.push_back(RandomHmmGraph(n, 1 + n / 3, rng));
      batch.data.push_back(RandomLoglikes(frames, static_cast<int>(batch.graphs.back().columns.size()), rng));
    }
  }
  for (size_t u = 0; u < batch.graphs.size(); ++u) {
    batch.graph_ptrs.push_back(&batch.graphs[u]);
    batch.views.push_back(batch.data[u].view());
  }
  return batch;
}

TEST(SparseHmmCpuTest, ViterbiAndForwardBackwardMatchTheReference) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const Batch batch = RandomBatch(rng);
  ThreadPool pool(2);
  const auto paths = GraphViterbiCpu(batch.graph_ptrs, batch.views, &pool);
  const auto posteriors = GraphForwardBackwardCpu(batch.graph_ptrs, batch.views, /*want_gamma=*/true, &pool);
  ASSERT_EQ(paths.size(), batch.graphs.size());
  int compared = 0;
  for (size_t u = 0; u < batch.graphs.size(); ++u) {
    SCOPED_TRACE(testing::Message() << "utterance " << u << ": " << batch.graphs[u].num_states() << " states, "
                                    << batch.data[u].rows() << " frames");
    const auto want_path = GraphViterbiReference(batch.graphs[u], batch.views[u]);
    const auto want_post = GraphForwardBackwardReference(batch.graphs[u], batch.views[u]);
    ASSERT_EQ(paths[u].status().code(), want_path.status().code()) << paths[u].status();
    ASSERT_EQ(posteriors[u].status().code(), want_post.status().code()) << posteriors[u].status();
    if (!want_path.ok()) continue;
    ++compared;
    EXPECT_EQ(paths[u]->states, want_path->states);
    EXPECT_NEAR(paths[u]->log_likelihood, want_path->log_likelihood, 1e-9 * std::abs(want_path->log_likelihood));
    EXPECT_NEAR(posteriors[u]->log_likelihood, want_post->log_likelihood, 1e-9 * std::abs(want_post->log_likelihood));
    double worst = 0;
    for (size_t i = 0; i < want_post->gamma.size(); ++i) {
      worst = std::max(worst, std::abs(posteriors[u]->gamma[i] - want_post->gamma[i]));
    }
    for (size_t a = 0; a < want_post->arc_counts.size(); ++a) {
      worst = std::max(worst, std::abs(posteriors[u]->arc_counts[a] - want_post->arc_counts[a]) /
                                  std::max(1.0, want_post->arc_counts[a]));
    }
    for (size_t k = 0; k < want_post->final_counts.size(); ++k) {
      worst = std::max(worst, std::abs(posteriors[u]->final_counts[k] - want_post->final_counts[k]));
    }
    EXPECT_LT(worst, 1e-9);
  }
  EXPECT_GE(compared, 5);
}

TEST(SparseHmmCpuTest, AnUtteranceWithoutAPathFailsAlone) {
  std::mt19937_64 rng(FreshTestSeed());
  Batch batch = RandomBatch(rng);
  // A chain of 50 states needs 50 frames; give it 10.
  HmmGraphBuilder chain;
  for (int s = 0; s < 50; ++s) chain.AddState(0);
  for (int s = 1; s < 50; ++s) chain.AddArc(s - 1, s, -0.5f);
  chain.AddInitial(0, 0.0f);
  chain.AddFinal(49, 0.0f);
  HmmGraph g;
  ASSERT_TRUE(chain.Finish({0}, &g).ok());
  batch.graphs.push_back(g);
  batch.data.push_back(RandomLoglikes(10, 1, rng));
  batch.graph_ptrs.clear();
  batch.views.clear();
  for (size_t u = 0; u < batch.graphs.size(); ++u) {
    batch.graph_ptrs.push_back(&batch.graphs[u]);
    batch.views.push_back(batch.data[u].view());
  }
  const auto paths = GraphViterbiCpu(batch.graph_ptrs, batch.views);
  const auto post = GraphForwardBackwardCpu(batch.graph_ptrs, batch.views, false);
  EXPECT_EQ(paths.back().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(post.back().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(post.back().status().message().find("at least 50 frames") != std::string::npos) << post.back().status();
  // The one-state, one-frame graph of the batch is fine.
  EXPECT_TRUE(paths[0].ok() || paths[0].status().code() == absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(post[0].ok() == paths[0].ok());
  EXPECT_TRUE(post[0].ok() ? post[0]->gamma.empty() : true) << "no gamma unless asked";
  const auto mismatched = GraphViterbiCpu(batch.graph_ptrs, absl::MakeSpan(batch.views).subspan(1));
  EXPECT_EQ(mismatched[0].status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
