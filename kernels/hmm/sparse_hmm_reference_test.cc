// The float64 graph recursions against brute force: every path of small
// random graphs enumerated (several entries and exits, skips, joins), and
// the errors: no path, bad sizes, bad scores, broken graphs.
#include "kernels/hmm/sparse_hmm_reference.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/hmm/graph_test_util.h"
#include "kernels/hmm/sparse_hmm_cpu.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogAdd(double a, double b) {
  if (a < b) std::swap(a, b);
  return b == kNegInf ? a : a + std::log1p(std::exp(b - a));
}

struct BruteForce {
  double log_likelihood = kNegInf;
  std::vector<double> gamma, arc_counts, final_counts;
  double best = kNegInf;
};

// Depth-first over every path of `frames` states, weighted.
BruteForce Enumerate(const HmmGraph& g, const FloatMatrix& b) {
  const int32_t n = g.num_states();
  const int64_t frames = b.rows();
  std::map<std::pair<int32_t, int32_t>, int32_t> arc_of;
  for (int32_t j = 0; j < n; ++j) {
    for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) arc_of[{g.arc_source[a], j}] = a;
  }
  std::vector<std::pair<double, std::vector<int32_t>>> paths;  // ending in a final state, with its index
  std::vector<int32_t> path;
  std::function<void(double)> extend = [&](double lp) {
    const int32_t last = path.back();
    if (static_cast<int64_t>(path.size()) == frames) {
      for (size_t k = 0; k < g.final_states.size(); ++k) {
        if (g.final_states[k] != last) continue;
        std::vector<int32_t> p = path;
        p.push_back(static_cast<int32_t>(k));
        paths.push_back({lp + g.final_log_weight[k], p});
      }
      return;
    }
    const int64_t t = path.size();
    for (int32_t j = 0; j < n; ++j) {
      const auto it = arc_of.find({last, j});
      if (it == arc_of.end()) continue;
      path.push_back(j);
      extend(lp + g.arc_log_weight[it->second] + b.row(t)[g.emission[j]]);
      path.pop_back();
    }
  };
  for (size_t k = 0; k < g.initial_states.size(); ++k) {
    path = {g.initial_states[k]};
    extend(double{g.initial_log_weight[k]} + b.row(0)[g.emission[path[0]]]);
  }
  BruteForce out;
  for (const auto& [lp, p] : paths) {
    out.log_likelihood = LogAdd(out.log_likelihood, lp);
    out.best = std::max(out.best, lp);
  }
  out.gamma.assign(frames * n, 0.0);
  out.arc_counts.assign(g.num_arcs(), 0.0);
  out.final_counts.assign(g.final_states.size(), 0.0);
  for (const auto& [lp, p] : paths) {
    const double w = std::exp(lp - out.log_likelihood);
    for (int64_t t = 0; t < frames; ++t) {
      out.gamma[t * n + p[t]] += w;
      if (t > 0) out.arc_counts[arc_of.at({p[t - 1], p[t]})] += w;
    }
    out.final_counts[p.back()] += w;
  }
  return out;
}

TEST(SparseHmmReferenceTest, MatchesEveryPathEnumerated) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 9);
    const int64_t frames = 1 + static_cast<int64_t>(rng() % 6);
    const HmmGraph g = RandomHmmGraph(n, 1 + static_cast<int32_t>(rng() % 4), rng);
    ASSERT_TRUE(ValidateHmmGraph(g).ok()) << ValidateHmmGraph(g);
    const FloatMatrix b = RandomLoglikes(frames, static_cast<int>(g.columns.size()), rng);
    const BruteForce truth = Enumerate(g, b);
    const auto post = GraphForwardBackwardReference(g, b.view());
    const auto best = GraphViterbiReference(g, b.view());
    if (truth.log_likelihood == kNegInf) {
      EXPECT_EQ(post.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ(best.status().code(), absl::StatusCode::kFailedPrecondition);
      continue;
    }
    ++checked;
    ASSERT_TRUE(post.ok()) << post.status();
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_LE(g.MinFrames(), frames);
    EXPECT_NEAR(post->log_likelihood, truth.log_likelihood, 1e-9 * std::abs(truth.log_likelihood));
    for (size_t i = 0; i < truth.gamma.size(); ++i) EXPECT_NEAR(post->gamma[i], truth.gamma[i], 1e-9) << i;
    for (size_t a = 0; a < truth.arc_counts.size(); ++a) EXPECT_NEAR(post->arc_counts[a], truth.arc_counts[a], 1e-9);
    for (size_t k = 0; k < truth.final_counts.size(); ++k) {
      EXPECT_NEAR(post->final_counts[k], truth.final_counts[k], 1e-9);
    }
    EXPECT_NEAR(best->log_likelihood, truth.best, 1e-9 * std::abs(truth.best));
    // The path's own score is the best score, and it is a path of the graph.
    double lp = kNegInf;
    for (size_t k = 0; k < g.initial_states.size(); ++k) {
      if (g.initial_states[k] == best->states[0]) lp = g.initial_log_weight[k];
    }
    lp += b.row(0)[g.emission[best->states[0]]];
    for (int64_t t = 1; t < frames; ++t) {
      const int32_t j = best->states[t];
      double w = kNegInf;
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        if (g.arc_source[a] == best->states[t - 1]) w = g.arc_log_weight[a];
      }
      lp += w + b.row(t)[g.emission[j]];
    }
    double end = kNegInf;
    for (size_t k = 0; k < g.final_states.size(); ++k) {
      if (g.final_states[k] == best->states.back()) end = g.final_log_weight[k];
    }
    EXPECT_NEAR(lp + end, truth.best, 1e-9 * std::abs(truth.best));
  }
  EXPECT_GT(checked, 20);
}

TEST(SparseHmmReferenceTest, DenseHmmsAsGraphsMatchTheDenseReference) {
  // Dense HMMs with zero initial probabilities and forbidden transitions,
  // N in {1, 2, 7, 1024}, T in {1, 2, 320}: as graphs (arcs back included),
  // the graph recursions give the dense reference's results (weights are
  // rounded to float in a graph, hence 1e-6), and the fast CPU path the
  // graph reference's exactly.
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int n : {1, 2, 7, 1024}) {
    const DenseHmm hmm = RandomDenseHmm(n, std::max(1, n / 2), rng);
    const absl::StatusOr<HmmGraph> g = GraphOfDenseHmm(hmm);
    ASSERT_TRUE(g.ok()) << g.status();
    for (int64_t frames : {1, 2, 320}) {
      SCOPED_TRACE(testing::Message() << n << " states, " << frames << " frames");
      const FloatMatrix loglikes = RandomLoglikes(frames, hmm.num_emission_states(), rng);
      const FloatMatrix b = GatherColumns(loglikes.view(), g->columns);
      const auto dense = ViterbiReference(hmm, loglikes.view());
      const auto graph = GraphViterbiReference(*g, b.view());
      ASSERT_TRUE(dense.ok() && graph.ok()) << dense.status() << graph.status();
      EXPECT_NEAR(graph->log_likelihood, dense->log_likelihood, 1e-6 * std::abs(dense->log_likelihood));
      const auto fast = GraphViterbiCpu({&*g}, {b.view()});
      ASSERT_TRUE(fast[0].ok());
      EXPECT_EQ(fast[0]->states, graph->states);
      if (n == 1024 && frames == 320) continue;  // the two float64 references would take seconds here
      const auto dense_post = ForwardBackwardReference(hmm, loglikes.view());
      const auto graph_post = GraphForwardBackwardReference(*g, b.view());
      ASSERT_TRUE(dense_post.ok() && graph_post.ok());
      EXPECT_NEAR(graph_post->log_likelihood, dense_post->log_likelihood, 1e-6 * std::abs(dense_post->log_likelihood));
      double worst = 0;
      for (size_t i = 0; i < dense_post->gamma.size(); ++i) {
        worst = std::max(worst, std::abs(graph_post->gamma[i] - dense_post->gamma[i]));
      }
      EXPECT_LT(worst, 1e-5);
      const auto fast_post = GraphForwardBackwardCpu({&*g}, {b.view()}, true);
      ASSERT_TRUE(fast_post[0].ok());
      EXPECT_NEAR(fast_post[0]->log_likelihood, graph_post->log_likelihood, 1e-9 * std::abs(graph_post->log_likelihood));
    }
  }
}

TEST(SparseHmmReferenceTest, TooFewFramesHaveNoPath) {
  HmmGraphBuilder builder;
  for (int s = 0; s < 3; ++s) builder.AddState(0);
  builder.AddArc(0, 1, -0.1f);
  builder.AddArc(1, 2, -0.1f);
  builder.AddArc(2, 2, -0.1f);
  builder.AddInitial(0, 0.0f);
  builder.AddFinal(2, 0.0f);
  HmmGraph g;
  ASSERT_TRUE(builder.Finish({5}, &g).ok());
  EXPECT_EQ(g.MinFrames(), 3);
  FloatMatrix b(2, 1);
  EXPECT_EQ(GraphViterbiReference(g, b.view()).status().code(), absl::StatusCode::kFailedPrecondition);
  FloatMatrix three(3, 1);
  EXPECT_TRUE(GraphViterbiReference(g, three.view()).ok());
  three.row(1)[0] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(GraphForwardBackwardReference(g, three.view()).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SparseHmmReferenceTest, RefusesBadEmissionsAndGraphs) {
  std::mt19937_64 rng(FreshTestSeed());
  const HmmGraph g = RandomHmmGraph(6, 3, rng);
  EXPECT_EQ(GraphViterbiReference(g, FloatMatrix(0, 3).view()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GraphViterbiReference(g, FloatMatrix(4, 2).view()).status().code(), absl::StatusCode::kInvalidArgument);
  FloatMatrix nan(4, 3);
  nan.row(2)[1] = std::nanf("");
  EXPECT_THAT(GraphForwardBackwardReference(g, nan.view()).status().message(), testing::HasSubstr("frame 2"));

  HmmGraph outside = g;
  outside.arc_source[outside.arc_begin[1]] = 6;  // an arc from a state the graph does not have
  EXPECT_THAT(ValidateHmmGraph(outside).message(), testing::HasSubstr("comes from state 6"));
  HmmGraph no_final = g;
  no_final.final_states.clear();
  no_final.final_log_weight.clear();
  no_final.final_slot.clear();
  EXPECT_THAT(ValidateHmmGraph(no_final).message(), testing::HasSubstr("no final"));
  HmmGraph bad_column = g;
  bad_column.emission[3] = 3;
  EXPECT_THAT(ValidateHmmGraph(bad_column).message(), testing::HasSubstr("column"));
  HmmGraph twice = g;
  twice.initial_states.push_back(0);
  twice.initial_log_weight.push_back(0.0f);
  EXPECT_THAT(ValidateHmmGraph(twice).message(), testing::HasSubstr("twice"));
  HmmGraph inf_weight = g;
  inf_weight.arc_log_weight[0] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(ValidateHmmGraph(inf_weight).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
