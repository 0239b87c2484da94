// The CUDA-free part of the graph recursions: the flattened layout (the
// outgoing arcs are the exact transpose of the incoming ones, in the order
// the backward pass needs) and the batch plan (every utterance once, chunks
// within the memory, launches of one CTA size, shared memory respected).
#include "kernels/hmm/cuda/graph_batch_plan.h"

#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/hmm/cuda/graph_hmm_policy.h"
#include "kernels/hmm/graph_test_util.h"

namespace gmmscore::graph_cuda {
namespace {

std::vector<const HmmGraph*> Pointers(const std::vector<HmmGraph>& graphs) {
  std::vector<const HmmGraph*> out;
  for (const HmmGraph& g : graphs) out.push_back(&g);
  return out;
}

std::vector<HmmGraph> RandomGraphs(std::mt19937_64& rng, int count, int max_states) {
  std::vector<HmmGraph> graphs;
  for (int k = 0; k < count; ++k) {
    const int n = 1 + static_cast<int>(rng() % max_states);
    graphs.push_back(RandomHmmGraph(n, 1 + n / 3, rng));
  }
  return graphs;
}

TEST(GraphLayoutTest, OutgoingArcsAreTheTransposeInBackwardOrder) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<HmmGraph> graphs = RandomGraphs(rng, 12, 300);
  for (ScoreColumns columns : {ScoreColumns::kModelStates, ScoreColumns::kGraphColumns}) {
    auto layout = BuildGraphLayout(Pointers(graphs), columns);
    ASSERT_TRUE(layout.ok()) << layout.status();
    ASSERT_EQ(layout->num_utterances(), static_cast<int>(graphs.size()));
    int32_t max_in_degree = 0;
    for (size_t u = 0; u < graphs.size(); ++u) {
      SCOPED_TRACE(testing::Message() << "utterance " << u);
      const HmmGraph& g = graphs[u];
      const int32_t s0 = layout->state_offset[u], a0 = layout->arc_offset[u];
      ASSERT_EQ(layout->states(u), g.num_states());
      ASSERT_EQ(layout->arcs(u), g.num_arcs());
      ASSERT_EQ(layout->finals(u), static_cast<int32_t>(g.final_states.size()));
      std::set<std::tuple<int32_t, int32_t, float, int32_t>> in, out;  // (from, to, weight, arc)
      for (int32_t j = 0; j < g.num_states(); ++j) {
        EXPECT_EQ(layout->in_begin[s0 + j], a0 + g.arc_begin[j]);
        EXPECT_EQ(layout->score_column[s0 + j],
                  columns == ScoreColumns::kModelStates ? g.columns[g.emission[j]] : g.emission[j]);
        max_in_degree = std::max(max_in_degree, g.arc_begin[j + 1] - g.arc_begin[j]);
        for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
          EXPECT_EQ(layout->in_arcs[a0 + a].state, g.arc_source[a]);
          EXPECT_EQ(layout->in_arcs[a0 + a].log_weight, g.arc_log_weight[a]);
          in.insert({g.arc_source[a], j, g.arc_log_weight[a], a});
        }
      }
      EXPECT_EQ(layout->in_begin[s0 + g.num_states()], a0 + g.num_arcs());
      EXPECT_EQ(layout->out_begin[s0 + g.num_states()], a0 + g.num_arcs());
      for (int32_t i = 0; i < g.num_states(); ++i) {
        for (int32_t a = layout->out_begin[s0 + i]; a < layout->out_begin[s0 + i + 1]; ++a) {
          const GraphArc arc = layout->out_arcs[a];
          if (a > layout->out_begin[s0 + i]) EXPECT_GT(arc.state, layout->out_arcs[a - 1].state);
          out.insert({i, arc.state, arc.log_weight, layout->out_arc_id[a]});
        }
      }
      EXPECT_EQ(in, out);
      for (int32_t j = 0; j < g.num_states(); ++j) {
        const auto initial = std::find(g.initial_states.begin(), g.initial_states.end(), j);
        const auto final = std::find(g.final_states.begin(), g.final_states.end(), j);
        EXPECT_EQ(layout->initial_weight[s0 + j], initial == g.initial_states.end()
                                                      ? -INFINITY
                                                      : g.initial_log_weight[initial - g.initial_states.begin()]);
        EXPECT_EQ(layout->final_weight[s0 + j],
                  final == g.final_states.end() ? -INFINITY : g.final_log_weight[final - g.final_states.begin()]);
      }
      for (size_t k = 0; k < g.final_states.size(); ++k) {
        EXPECT_EQ(layout->final_states[layout->final_offset[u] + k], g.final_states[k]);
        EXPECT_EQ(layout->final_state_weight[layout->final_offset[u] + k], g.final_log_weight[k]);
      }
    }
    EXPECT_EQ(layout->max_in_degree, max_in_degree);
  }
}

TEST(GraphPlanTest, ThreadsPerCtaArePowersOfTwoWithFewStatesEach) {
  for (int32_t n : {1, 2, 7, 32, 64, 65, 300, 1024, 2048, 2049, 3000, 100000}) {
    const int threads = ThreadsPerCta(n);
    EXPECT_EQ(threads & (threads - 1), 0) << n;
    EXPECT_GE(threads, kMinThreads);
    EXPECT_LE(threads, kMaxThreads);
    if (threads < kMaxThreads) EXPECT_LE(n, threads * kStatesPerThread) << n;
    if (threads > kMinThreads) EXPECT_GT(n, threads / 2 * kStatesPerThread) << n;
    const int warps = ThreadsForLargest(n);  // whole warps, no more than needed
    EXPECT_EQ(warps % 32, 0);
    EXPECT_LE(warps, threads);
    if (warps < kMaxThreads) EXPECT_LE(n, warps * kStatesPerThread) << n;
    if (warps > kMinThreads) EXPECT_GT(n, (warps - 32) * kStatesPerThread) << n;
  }
  EXPECT_EQ(ThreadsForLargest(300), 160);
}

// The invariants every plan keeps, whatever the limits.
void ExpectValidPlan(GraphPass pass, const GraphPlan& plan, const GraphLayout& layout, const std::vector<int64_t>& frames,
                     const std::vector<int64_t>& packed, const GraphPlanLimits& limits) {
  std::vector<int> seen(frames.size(), 0);
  for (const GraphChunk& chunk : plan.chunks) {
    ASSERT_FALSE(chunk.utterances.empty());
    ASSERT_EQ(chunk.scratch_offset.size(), chunk.utterances.size());
    ASSERT_EQ(chunk.packed_offset.size(), chunk.utterances.size());
    int64_t scratch = 0, floats = 0;
    for (size_t k = 0; k < chunk.utterances.size(); ++k) {
      const int u = chunk.utterances[k];
      ++seen[u];
      EXPECT_EQ(chunk.scratch_offset[k], scratch);  // packed back to back: no overlap
      EXPECT_EQ(chunk.packed_offset[k], floats);
      scratch += frames[u] * layout.states(u);
      floats += packed.empty() ? 0 : packed[u];
    }
    EXPECT_EQ(chunk.scratch_elements, scratch);
    EXPECT_EQ(chunk.packed_floats, floats);
    EXPECT_GE(plan.max_scratch_elements, scratch);
    EXPECT_GE(plan.max_packed_floats, floats);
    if (chunk.utterances.size() > 1) {
      EXPECT_LE(scratch * limits.scratch_element_bytes + floats * 4, limits.memory_bytes);
    }
    int next = 0;
    for (const GraphLaunchGroup& group : chunk.groups) {
      EXPECT_EQ(group.first, next);
      EXPECT_GT(group.count, 0);
      EXPECT_EQ(group.threads % 32, 0);
      EXPECT_TRUE(group.ring == DeepRing(pass) || group.ring == kShallowRing);
      if (!limits.shared_graphs) EXPECT_FALSE(group.shared_graph);
      next += group.count;
      int32_t largest = 0;
      for (int k = group.first; k < group.first + group.count; ++k) {
        const int u = chunk.utterances[k];
        largest = std::max(largest, layout.states(u));
        EXPECT_EQ(ThreadsPerCta(layout.states(u)), ThreadsPerCta(layout.states(chunk.utterances[group.first])));
        EXPECT_LE(group.threads, ThreadsPerCta(layout.states(u)));
        EXPECT_LE(SharedBytes(pass, layout.states(u), layout.arcs(u), group.ring, group.shared_graph),
                  group.shared_bytes);
        if (k > group.first) {  // largest work first within a launch
          const int before = chunk.utterances[k - 1];
          EXPECT_GE(frames[before] * (layout.states(before) + layout.arcs(before)),
                    frames[u] * (layout.states(u) + layout.arcs(u)));
        }
      }
      EXPECT_LE(group.shared_bytes, limits.shared_bytes);
      EXPECT_EQ(group.threads, ThreadsForLargest(largest));
    }
    EXPECT_EQ(next, static_cast<int>(chunk.utterances.size()));
  }
  EXPECT_THAT(seen, testing::Each(1));
}

TEST(GraphPlanTest, ChunksFitTheMemoryAndLaunchesShareOneCtaSize) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<HmmGraph> graphs = RandomGraphs(rng, 40, 3000);
  auto layout = BuildGraphLayout(Pointers(graphs), ScoreColumns::kGraphColumns);
  ASSERT_TRUE(layout.ok());
  std::vector<int64_t> frames, packed;
  int64_t largest = 0, total = 0;
  for (const HmmGraph& g : graphs) {
    frames.push_back(1 + static_cast<int64_t>(rng() % 3000));
    packed.push_back(frames.back() * static_cast<int64_t>(g.columns.size()));
    const int64_t bytes = frames.back() * g.num_states() * 8 + packed.back() * 4;
    largest = std::max(largest, bytes);
    total += bytes;
  }
  for (GraphPass pass : {GraphPass::kViterbi, GraphPass::kForwardBackward}) {
    for (int64_t memory : {total, total / 3, largest}) {
      SCOPED_TRACE(testing::Message() << "memory " << memory);
      GraphPlanLimits limits{memory, 227 << 10, 8, memory != largest};
      auto plan = PlanGraphBatch(pass, *layout, frames, packed, limits);
      ASSERT_TRUE(plan.ok()) << plan.status();
      ExpectValidPlan(pass, *plan, *layout, frames, packed, limits);
      if (memory == total) EXPECT_EQ(plan->chunks.size(), 1u);
      if (memory < total) EXPECT_GT(plan->chunks.size(), 1u);
    }
  }
  // Device scores: nothing to pack.
  GraphPlanLimits limits{total, 227 << 10, 1, true};
  auto plan = PlanGraphBatch(GraphPass::kViterbi, *layout, frames, {}, limits);
  ASSERT_TRUE(plan.ok());
  ExpectValidPlan(GraphPass::kViterbi, *plan, *layout, frames, {}, limits);
  EXPECT_EQ(plan->max_packed_floats, 0);
}

TEST(GraphPlanTest, TooLargeForMemoryOrSharedMemoryNamesTheUtterance) {
  std::mt19937_64 rng(7);
  std::vector<HmmGraph> graphs = {RandomHmmGraph(10, 4, rng), RandomHmmGraph(3000, 900, rng)};
  auto layout = BuildGraphLayout(Pointers(graphs), ScoreColumns::kModelStates);
  ASSERT_TRUE(layout.ok());
  const std::vector<int64_t> frames = {5, 100};
  absl::Status status = PlanGraphBatch(GraphPass::kForwardBackward, *layout, frames, {}, {100 * 3000 * 12 - 1, 227 << 10, 12, true}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
  status = PlanGraphBatch(GraphPass::kViterbi, *layout, frames, {}, {1 << 30, 32 << 10, 1, true}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), testing::HasSubstr("utterance 1"));
}

TEST(GraphPlanTest, LargeGraphsLeaveTheirArcsInGlobalMemoryOrTakeTheShallowRing) {
  std::mt19937_64 rng(11);
  std::vector<HmmGraph> graphs = {RandomHmmGraph(3000, 900, rng), RandomHmmGraph(300, 100, rng)};
  auto layout = BuildGraphLayout(Pointers(graphs), ScoreColumns::kModelStates);
  ASSERT_TRUE(layout.ok());
  const std::vector<int64_t> frames = {50, 50};
  const GraphPass pass = GraphPass::kForwardBackward;
  const int32_t arcs = layout->arcs(0);
  // (limit, ring and shared graph the large graph gets); the small one always
  // gets the deep ring and its graph in shared memory.
  const std::vector<std::tuple<int64_t, int, bool>> cases = {
      {SharedBytes(pass, 3000, arcs, DeepRing(pass), true), DeepRing(pass), true},
      {SharedBytes(pass, 3000, arcs, kShallowRing, true), kShallowRing, true},
      {SharedBytes(pass, 3000, arcs, DeepRing(pass), false), DeepRing(pass), false},
      {SharedBytes(pass, 3000, arcs, kShallowRing, false), kShallowRing, false},
  };
  for (const auto& [shared, ring, shared_graph] : cases) {
    SCOPED_TRACE(testing::Message() << "shared " << shared);
    GraphPlanLimits limits{int64_t{1} << 40, shared, 12, true};
    auto plan = PlanGraphBatch(pass, *layout, frames, {}, limits);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectValidPlan(pass, *plan, *layout, frames, {}, limits);
    ASSERT_EQ(plan->chunks.size(), 1u);
    ASSERT_EQ(plan->chunks[0].groups.size(), 2u);
    for (const GraphLaunchGroup& group : plan->chunks[0].groups) {
      const int u = plan->chunks[0].utterances[group.first];
      EXPECT_EQ(group.ring, u == 0 ? ring : DeepRing(pass));
      EXPECT_EQ(group.shared_graph, u == 0 ? shared_graph : true);
    }
  }
}

TEST(GraphPlanTest, DescribeChunkPlacesEveryUtterance) {
  std::mt19937_64 rng(3);
  const std::vector<HmmGraph> graphs = RandomGraphs(rng, 6, 50);
  auto layout = BuildGraphLayout(Pointers(graphs), ScoreColumns::kModelStates);
  ASSERT_TRUE(layout.ok());
  const std::vector<int64_t> frames = {3, 1, 4, 1, 5, 9}, offset = {10, 20, 30, 40, 50, 60}, stride = {7, 7, 7, 7, 7, 8};
  auto plan = PlanGraphBatch(GraphPass::kViterbi, *layout, frames, {}, {1 << 20, 48 << 10, 1, true});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->chunks.size(), 1u);
  const GraphChunk& chunk = plan->chunks[0];
  const std::vector<GraphUtterance> ctas = DescribeChunk(chunk, *layout, frames, offset, stride);
  ASSERT_EQ(ctas.size(), graphs.size());
  const std::vector<int64_t> frame_offset = {0, 3, 4, 8, 9, 14};
  for (size_t k = 0; k < ctas.size(); ++k) {
    const int u = chunk.utterances[k];
    EXPECT_EQ(ctas[k].index, u);
    EXPECT_EQ(ctas[k].scores_offset, offset[u]);
    EXPECT_EQ(ctas[k].row_stride, stride[u]);
    EXPECT_EQ(ctas[k].scratch_offset, chunk.scratch_offset[k]);
    EXPECT_EQ(ctas[k].frame_offset, frame_offset[u]);
    EXPECT_EQ(ctas[k].state_offset, layout->state_offset[u]);
    EXPECT_EQ(ctas[k].arc_offset, layout->arc_offset[u]);
    EXPECT_EQ(ctas[k].final_offset, layout->final_offset[u]);
    EXPECT_EQ(ctas[k].num_states, graphs[u].num_states());
    EXPECT_EQ(ctas[k].num_arcs, graphs[u].num_arcs());
    EXPECT_EQ(ctas[k].num_finals, static_cast<int32_t>(graphs[u].final_states.size()));
    EXPECT_EQ(ctas[k].num_frames, frames[u]);
  }
}

}  // namespace
}  // namespace gmmscore::graph_cuda
