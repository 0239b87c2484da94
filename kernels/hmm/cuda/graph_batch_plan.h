// The host side of the batched graph recursions (graph_hmm_cuda.h), free of
// CUDA so that it is tested on any machine: the graphs of a batch flattened
// into the arrays the kernels read, and the plan that cuts the batch into
// chunks that fit in device memory and, within a chunk, into one launch per
// CTA size. Internal to graph_hmm_cuda.cc.
//
//   GMM_ASSIGN_OR_RETURN(GraphLayout layout, BuildGraphLayout(graphs, ScoreColumns::kModelStates));
//   GMM_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraphBatch(GraphPass::kViterbi, layout, frames, {}, limits));
//   for (const GraphChunk& chunk : plan.chunks) {
//     std::vector<GraphUtterance> ctas = DescribeChunk(chunk, layout, frames, score_offset, row_stride);
//     ... upload ctas, one launch per chunk.groups[g] ...
//   }
//
// Thread safety: pure functions of their arguments.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_GRAPH_BATCH_PLAN_H_
#define GMMSCORE_KERNELS_HMM_CUDA_GRAPH_BATCH_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/hmm/hmm_graph.h"

namespace gmmscore::graph_cuda {

// The other end of an arc and its weight: the source of an incoming arc,
// the destination of an outgoing one. One 8-byte load in the kernels.
struct GraphArc {
  int32_t state;  // within its utterance's graph
  float log_weight;
};

// Which column of a score row a state reads: its model state
// (columns[emission[j]], for scores of every model state, the device
// entries) or its graph column (emission[j], for T x columns.size()
// matrices, the host entries).
enum class ScoreColumns { kModelStates, kGraphColumns };

// Every graph of a batch, concatenated in the caller's order. Arc indices
// are absolute (into in_arcs / out_arcs); states inside arcs are local to
// their graph. Offsets have one entry per utterance plus a final total.
struct GraphLayout {
  std::vector<int32_t> state_offset, arc_offset, final_offset;
  std::vector<int32_t> in_begin;      // total states + 1: incoming arcs, by destination, sorted by source
  std::vector<GraphArc> in_arcs;      // in the graphs' own arc order
  std::vector<int32_t> out_begin;     // total states + 1: outgoing arcs, by source, sorted by destination
  std::vector<GraphArc> out_arcs;
  std::vector<int32_t> out_arc_id;    // per outgoing arc: its index among its graph's arcs
  std::vector<int32_t> score_column;  // per state
  std::vector<float> initial_weight;  // per state, -inf where it is no initial state
  std::vector<float> final_weight;    // per state, -inf where it is no final state
  std::vector<int32_t> final_states;  // each graph's final_states, local indices
  std::vector<float> final_state_weight;
  int32_t max_in_degree = 0;

  int num_utterances() const { return static_cast<int>(state_offset.size()) - 1; }
  int32_t states(int u) const { return state_offset[u + 1] - state_offset[u]; }
  int32_t arcs(int u) const { return arc_offset[u + 1] - arc_offset[u]; }
  int32_t finals(int u) const { return final_offset[u + 1] - final_offset[u]; }
};

// The graphs must be valid (ValidateHmmGraph). RESOURCE_EXHAUSTED when the
// batch has 2^31 states, arcs or final states or more.
absl::StatusOr<GraphLayout> BuildGraphLayout(absl::Span<const HmmGraph* const> graphs, ScoreColumns columns);

enum class GraphPass { kViterbi, kForwardBackward };

// The size class of a graph of `states` states: a power of two of threads
// (graph_hmm_policy.h). Utterances of one class share a launch.
int ThreadsPerCta(int32_t states);
// The threads a launch gives each CTA: the fewest whole warps that give its
// largest graph at most kStatesPerThread states a thread (at most kMaxThreads).
int ThreadsForLargest(int32_t states);
// Dynamic shared memory of one CTA: the two frames of delta or alpha/beta
// (float64), the scores ring (float32), for forward-backward the arc counts
// (float64) and the ring of alpha (float64) and saved scores; with
// shared_graph, the arcs and their CSR offsets.
int64_t SharedBytes(GraphPass pass, int32_t states, int32_t arcs, int ring, bool shared_graph);
// The deepest cp.async ring of a pass (graph_hmm_policy.h).
int DeepRing(GraphPass pass);

// One kernel launch: CTAs [first, first + count) of its chunk.
struct GraphLaunchGroup {
  int first = 0;
  int count = 0;
  int threads = 0;
  int ring = 0;               // frames in flight (DeepRing(pass) or kShallowRing)
  bool shared_graph = false;  // the graphs are copied into shared memory
  int64_t shared_bytes = 0;   // the largest of its CTAs'
};

// Utterances that run together, with their per-frame scratch: alpha (then
// gamma, and the scores it read) for forward-backward, backpointers for
// Viterbi.
struct GraphChunk {
  std::vector<int32_t> utterances;      // batch indices in CTA order (groups contiguous)
  std::vector<int64_t> scratch_offset;  // per CTA: elements into the chunk's scratch
  std::vector<int64_t> packed_offset;   // per CTA: floats into the chunk's packed host scores
  std::vector<GraphLaunchGroup> groups;
  int64_t scratch_elements = 0;
  int64_t packed_floats = 0;
};

struct GraphPlan {
  std::vector<GraphChunk> chunks;
  int64_t max_scratch_elements = 0;  // over chunks: the scratch to allocate
  int64_t max_packed_floats = 0;
};

struct GraphPlanLimits {
  int64_t memory_bytes = 0;         // for one chunk's scratch and packed scores
  int64_t shared_bytes = 48 << 10;  // per CTA, the device's opt-in limit
  int scratch_element_bytes = 12;   // 12 (alpha and saved score), 1 or 2 (backpointers)
  bool shared_graphs = true;        // graphs in shared memory where they fit
};

// Orders the batch by work (frames x (states + arcs), largest first, so
// that the long CTAs start first), cuts it greedily into chunks that fit
// `limits.memory_bytes`, and each chunk into launches by ThreadsPerCta,
// ring depth and where the graph lives: each utterance takes the first of
// (shared graph, deep ring), (shared graph, shallow ring), (deep ring),
// (shallow ring) that fits one CTA's shared memory. `packed_floats` gives each utterance's host scores (frames x
// columns) to upload with its chunk; empty when the scores are on the device.
// RESOURCE_EXHAUSTED naming the utterance whose graph does not fit one CTA's
// shared memory, or whose scratch alone exceeds the memory.
absl::StatusOr<GraphPlan> PlanGraphBatch(GraphPass pass, const GraphLayout& layout, absl::Span<const int64_t> frames,
                                         absl::Span<const int64_t> packed_floats, const GraphPlanLimits& limits);

// One utterance as its CTA sees it. Offsets count elements.
struct GraphUtterance {
  int64_t scores_offset;   // its frame 0's score row
  int64_t row_stride;      // floats from one frame's row to the next
  int64_t scratch_offset;  // its frames x states block of the chunk's scratch
  int64_t frame_offset;    // its frames in the per-frame outputs (Viterbi paths)
  int32_t state_offset;    // into the per-state arrays
  int32_t arc_offset;      // its first arc (in and out alike)
  int32_t final_offset;
  int32_t num_states;
  int32_t num_arcs;
  int32_t num_finals;
  int32_t num_frames;
  int32_t index;           // in the batch (the caller's order)
};

// The chunk's CTAs in order. score_offset / row_stride are per batch
// utterance (only the chunk's are read); frame offsets are the prefix sums
// of `frames` in the caller's order.
std::vector<GraphUtterance> DescribeChunk(const GraphChunk& chunk, const GraphLayout& layout,
                                          absl::Span<const int64_t> frames, absl::Span<const int64_t> score_offset,
                                          absl::Span<const int64_t> row_stride);

}  // namespace gmmscore::graph_cuda

#endif  // GMMSCORE_KERNELS_HMM_CUDA_GRAPH_BATCH_PLAN_H_
