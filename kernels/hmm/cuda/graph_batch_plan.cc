#include "kernels/hmm/cuda/graph_batch_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/hmm/cuda/graph_hmm_policy.h"

namespace gmmscore::graph_cuda {
namespace {

constexpr float kNoWeight = -std::numeric_limits<float>::infinity();

// Appends graph g's outgoing arcs (the transpose of its CSR) to the layout:
// by source, each source's arcs by destination, as the reference's backward
// pass meets them.
void AppendOutgoing(const HmmGraph& g, int64_t arc_base, GraphLayout& layout) {
  const int32_t n = g.num_states();
  std::vector<int32_t> count(n + 1, 0);
  for (int32_t source : g.arc_source) ++count[source + 1];
  std::partial_sum(count.begin(), count.end(), count.begin());
  std::vector<int32_t> next(count.begin(), count.end() - 1);
  const size_t first = layout.out_arcs.size();
  layout.out_arcs.resize(first + g.num_arcs());
  layout.out_arc_id.resize(first + g.num_arcs());
  for (int32_t j = 0; j < n; ++j) {  // destinations ascending, so each source's list comes out sorted
    for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
      const size_t at = first + next[g.arc_source[a]]++;
      layout.out_arcs[at] = {j, g.arc_log_weight[a]};
      layout.out_arc_id[at] = a;
    }
  }
  for (int32_t i = 0; i < n; ++i) layout.out_begin.push_back(static_cast<int32_t>(arc_base + count[i + 1]));
}

}  // namespace

absl::StatusOr<GraphLayout> BuildGraphLayout(absl::Span<const HmmGraph* const> graphs, ScoreColumns columns) {
  int64_t states = 0, arcs = 0, finals = 0;
  for (const HmmGraph* g : graphs) {
    states += g->num_states();
    arcs += g->num_arcs();
    finals += static_cast<int64_t>(g->final_states.size());
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (states >= kMax || arcs >= kMax || finals >= kMax) {
    return absl::ResourceExhaustedError(absl::StrCat("the batch has ", states, " states, ", arcs, " arcs and ", finals,
                                                     " final states; one call takes fewer than 2^31 of each"));
  }
  GraphLayout layout;
  layout.state_offset.reserve(graphs.size() + 1);
  layout.in_begin.reserve(states + 1);
  layout.out_begin.reserve(states + 1);
  layout.in_arcs.reserve(arcs);
  layout.score_column.reserve(states);
  layout.in_begin.push_back(0);
  layout.out_begin.push_back(0);
  for (const HmmGraph* g : graphs) {
    const int32_t n = g->num_states();
    const int32_t arc_base = static_cast<int32_t>(layout.in_arcs.size());
    layout.state_offset.push_back(static_cast<int32_t>(layout.score_column.size()));
    layout.arc_offset.push_back(arc_base);
    layout.final_offset.push_back(static_cast<int32_t>(layout.final_states.size()));
    for (int32_t j = 0; j < n; ++j) {
      layout.in_begin.push_back(arc_base + g->arc_begin[j + 1]);
      layout.max_in_degree = std::max(layout.max_in_degree, g->arc_begin[j + 1] - g->arc_begin[j]);
      const int32_t column = g->emission[j];
      layout.score_column.push_back(columns == ScoreColumns::kModelStates ? g->columns[column] : column);
    }
    for (int64_t a = 0; a < g->num_arcs(); ++a) layout.in_arcs.push_back({g->arc_source[a], g->arc_log_weight[a]});
    AppendOutgoing(*g, arc_base, layout);
    const size_t weights_at = layout.initial_weight.size();
    layout.initial_weight.resize(weights_at + n, kNoWeight);
    layout.final_weight.resize(weights_at + n, kNoWeight);
    for (size_t k = 0; k < g->initial_states.size(); ++k) {
      layout.initial_weight[weights_at + g->initial_states[k]] = g->initial_log_weight[k];
    }
    for (size_t k = 0; k < g->final_states.size(); ++k) {
      layout.final_weight[weights_at + g->final_states[k]] = g->final_log_weight[k];
      layout.final_states.push_back(g->final_states[k]);
      layout.final_state_weight.push_back(g->final_log_weight[k]);
    }
  }
  layout.state_offset.push_back(static_cast<int32_t>(layout.score_column.size()));
  layout.arc_offset.push_back(static_cast<int32_t>(layout.in_arcs.size()));
  layout.final_offset.push_back(static_cast<int32_t>(layout.final_states.size()));
  return layout;
}

int ThreadsPerCta(int32_t states) {
  const int64_t wanted = (int64_t{states} + kStatesPerThread - 1) / kStatesPerThread;
  int threads = kMinThreads;
  while (threads < wanted && threads < kMaxThreads) threads *= 2;
  return threads;
}

int ThreadsForLargest(int32_t states) {
  const int64_t wanted = (int64_t{states} + kStatesPerThread - 1) / kStatesPerThread;
  return static_cast<int>(std::clamp<int64_t>((wanted + 31) / 32 * 32, kMinThreads, kMaxThreads));
}

int64_t SharedBytes(GraphPass pass, int32_t states, int32_t arcs, int ring, bool shared_graph) {
  const int64_t n = states;
  const int64_t graph = shared_graph ? int64_t{arcs} * 8 + (n + 1) * 4 : 0;
  const int64_t frames_and_scores = 2 * n * 8 + ring * n * 4 + graph;
  if (pass == GraphPass::kViterbi) return frames_and_scores;
  return frames_and_scores + int64_t{arcs} * 8 + ring * n * 8;
}

int DeepRing(GraphPass pass) { return pass == GraphPass::kViterbi ? kViterbiDeepRing : kForwardBackwardDeepRing; }

absl::StatusOr<GraphPlan> PlanGraphBatch(GraphPass pass, const GraphLayout& layout, absl::Span<const int64_t> frames,
                                         absl::Span<const int64_t> packed_floats, const GraphPlanLimits& limits) {
  const int batch = layout.num_utterances();
  std::vector<int32_t> order(batch);
  std::iota(order.begin(), order.end(), 0);
  auto work = [&](int u) { return frames[u] * (int64_t{layout.states(u)} + layout.arcs(u)); };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return work(a) > work(b); });

  // Each utterance's launch key: (class, ring, shared graph), the first
  // that fits.
  struct Key {
    int threads, ring;
    bool shared_graph;
    bool operator==(const Key& o) const {
      return threads == o.threads && ring == o.ring && shared_graph == o.shared_graph;
    }
    bool operator>(const Key& o) const {
      return std::tie(threads, ring, shared_graph) > std::tie(o.threads, o.ring, o.shared_graph);
    }
  };
  std::vector<Key> key(batch);
  for (int u = 0; u < batch; ++u) {
    const int32_t n = layout.states(u), a = layout.arcs(u);
    bool found = false;
    for (bool shared_graph : {true, false}) {
      if (shared_graph && !limits.shared_graphs) continue;
      for (int ring : {DeepRing(pass), kShallowRing}) {
        if (!found && SharedBytes(pass, n, a, ring, shared_graph) <= limits.shared_bytes) {
          key[u] = {ThreadsPerCta(n), ring, shared_graph};
          found = true;
        }
      }
    }
    if (!found) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "utterance ", u, ": its graph (", n, " states, ", a, " arcs) needs ",
          SharedBytes(pass, n, a, kShallowRing, false), " bytes of shared memory per CTA, the device gives ",
          limits.shared_bytes));
    }
  }

  GraphPlan plan;
  auto close_chunk = [&](std::vector<int32_t> members) {
    // Stable by key: each launch keeps the work order.
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return key[a] > key[b]; });
    GraphChunk chunk;
    for (int32_t u : members) {
      const int cta = static_cast<int>(chunk.utterances.size());
      if (chunk.groups.empty() || !(key[chunk.utterances.back()] == key[u])) {
        chunk.groups.push_back({cta, 0, kMinThreads, key[u].ring, key[u].shared_graph, 0});
      }
      GraphLaunchGroup& group = chunk.groups.back();
      ++group.count;
      group.threads = std::max(group.threads, ThreadsForLargest(layout.states(u)));
      group.shared_bytes = std::max(group.shared_bytes, SharedBytes(pass, layout.states(u), layout.arcs(u), group.ring,
                                                                    group.shared_graph));
      chunk.utterances.push_back(u);
      chunk.scratch_offset.push_back(chunk.scratch_elements);
      chunk.packed_offset.push_back(chunk.packed_floats);
      chunk.scratch_elements += frames[u] * layout.states(u);
      if (!packed_floats.empty()) chunk.packed_floats += packed_floats[u];
    }
    plan.max_scratch_elements = std::max(plan.max_scratch_elements, chunk.scratch_elements);
    plan.max_packed_floats = std::max(plan.max_packed_floats, chunk.packed_floats);
    plan.chunks.push_back(std::move(chunk));
  };
  std::vector<int32_t> members;
  int64_t used = 0;
  for (int32_t u : order) {
    const int64_t bytes = frames[u] * layout.states(u) * limits.scratch_element_bytes +
                          (packed_floats.empty() ? 0 : packed_floats[u] * int64_t{sizeof(float)});
    if (bytes > limits.memory_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("utterance ", u, " (", frames[u], " frames, ", layout.states(u),
                                                       " states) needs ", bytes, " bytes of device memory, ",
                                                       limits.memory_bytes, " are free for it"));
    }
    if (used + bytes > limits.memory_bytes) {
      close_chunk(std::move(members));
      members.clear();
      used = 0;
    }
    members.push_back(u);
    used += bytes;
  }
  if (!members.empty()) close_chunk(std::move(members));
  return plan;
}

std::vector<GraphUtterance> DescribeChunk(const GraphChunk& chunk, const GraphLayout& layout,
                                          absl::Span<const int64_t> frames, absl::Span<const int64_t> score_offset,
                                          absl::Span<const int64_t> row_stride) {
  std::vector<int64_t> frame_offset(frames.size() + 1, 0);
  std::partial_sum(frames.begin(), frames.end(), frame_offset.begin() + 1);
  std::vector<GraphUtterance> ctas;
  ctas.reserve(chunk.utterances.size());
  for (size_t k = 0; k < chunk.utterances.size(); ++k) {
    const int u = chunk.utterances[k];
    ctas.push_back({score_offset[u], row_stride[u], chunk.scratch_offset[k], frame_offset[u], layout.state_offset[u],
                    layout.arc_offset[u], layout.final_offset[u], layout.states(u), layout.arcs(u), layout.finals(u),
                    static_cast<int32_t>(frames[u]), u});
  }
  return ctas;
}

}  // namespace gmmscore::graph_cuda
