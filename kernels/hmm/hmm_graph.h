// HmmGraph: a sparse HMM whose states all emit, the shape forced alignment
// and Baum-Welch over an utterance need (utterance_graph.h compiles one from
// a Sphinx model, a dictionary and a transcript). The recursions over it
// (sparse_hmm_reference.h, sparse_hmm_cpu.h, cuda/sparse_hmm_cuda.h) are
// the dense ones of hmm_reference.h with the N x N matrix replaced by arcs.
//
//   HmmGraph g;                       // states in topological order
//   g.columns = {17, 4};              // the model states (senones) it uses
//   g.emission = {0, 0, 1};           // state -> column of its emission scores
//   ... arcs by destination (CSR), initial and final log weights ...
//   GMM_RETURN_IF_ERROR(ValidateHmmGraph(g));
//
// Emission scores for an utterance are a T x columns.size() matrix: column c
// holds model state columns[c]'s log-likelihoods. Only the model states a
// graph uses are scored.
//
// Order: the recursions read frame t - 1 to make frame t, so arcs may go
// anywhere (a dense HMM as a graph has arcs back). Utterance graphs are
// left-to-right, and the compiler numbers their states in that order.
//
// Weights are natural logs; -infinity is never stored (an impossible arc is
// left out). Weights need not be normalised: a graph's branch points (an
// optional silence, alternative pronunciations) may give each branch weight
// 1 (log 0), so a path's score is the product of its model transitions.
// `arc_slot` ties an arc to a parameter for Baum-Welch: the index of the
// model transition it uses (for Sphinx: (tmat * n_emit + from) *
// (n_emit + 1) + to, with to == n_emit the exit), or -1 when it is no model
// parameter.
//
// Thread safety: a value type; const access from many threads is safe.
#ifndef GMMSCORE_KERNELS_HMM_HMM_GRAPH_H_
#define GMMSCORE_KERNELS_HMM_HMM_GRAPH_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/dense_hmm.h"

namespace gmmscore {

struct HmmGraph {
  std::vector<int32_t> columns;   // emission column -> model state (senone), distinct
  std::vector<int32_t> emission;  // per state: its column, in [0, columns.size())

  // Incoming arcs of state s: [arc_begin[s], arc_begin[s + 1]), by source.
  std::vector<int32_t> arc_begin = {0};  // num_states() + 1
  std::vector<int32_t> arc_source;
  std::vector<float> arc_log_weight;
  std::vector<int32_t> arc_slot;  // -1 when the arc is no model parameter

  // Entry and exit: states a path may start or end in, with their weights.
  std::vector<int32_t> initial_states;
  std::vector<float> initial_log_weight;
  std::vector<int32_t> final_states;
  std::vector<float> final_log_weight;
  std::vector<int32_t> final_slot;  // -1, or the exit's model transition

  int32_t num_states() const { return static_cast<int32_t>(emission.size()); }
  int64_t num_arcs() const { return static_cast<int64_t>(arc_source.size()); }
  // The fewest frames any path needs: the shortest initial -> final chain.
  int32_t MinFrames() const;
};

// INVALID_ARGUMENT naming the first broken rule: sizes that disagree, a
// column or source out of range, arcs into a state not sorted by distinct
// source, a non-finite or NaN weight, no initial or no final state, a state
// listed twice as initial or final.
absl::Status ValidateHmmGraph(const HmmGraph& graph);

// Per state: its initial (final) log weight, -inf where it has none; for
// the recursions.
std::vector<double> InitialLogWeights(const HmmGraph& graph);
std::vector<double> FinalLogWeights(const HmmGraph& graph);

// FAILED_PRECONDITION: no path of `graph` produces `frames` frames (the
// recursions' error, naming the graph's size and MinFrames).
absl::Status NoGraphPathError(const HmmGraph& graph, int64_t frames);

// A dense HMM as a graph: an arc for every non-zero transition (weights
// rounded to float), its non-zero initial probabilities as entries, every
// state an exit (weight 1). Columns are the distinct emission states,
// ascending: gather them from a T x GMM-states matrix with GatherColumns.
// INVALID_ARGUMENT for an HMM without states.
absl::StatusOr<HmmGraph> GraphOfDenseHmm(const DenseHmm& hmm);

// The columns `columns` of `scores`, in that order (T x columns.size()).
FloatMatrix GatherColumns(ConstMatrixView scores, const std::vector<int32_t>& columns);

// Builds a graph from states, arcs in any order, entries and exits.
class HmmGraphBuilder {
 public:
  // A new state emitting `column`; returns its index.
  int32_t AddState(int32_t column);
  void AddArc(int32_t from, int32_t to, float log_weight, int32_t slot = -1);
  void AddInitial(int32_t state, float log_weight);
  void AddFinal(int32_t state, float log_weight, int32_t slot = -1);
  // Sorts the arcs into the CSR (by destination, then source) and validates.
  absl::Status Finish(std::vector<int32_t> columns, HmmGraph* out);

 private:
  struct Arc {
    int32_t from, to;
    float log_weight;
    int32_t slot;
  };
  HmmGraph graph_;
  std::vector<Arc> arcs_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_HMM_GRAPH_H_
