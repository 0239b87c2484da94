// The float64 reference of the recursions over a sparse HmmGraph, in log
// space: forward, backward, state posteriors, expected arc counts, the total
// log-likelihood, and Viterbi with traceback. Slow and obviously right; the
// fast CPU path (sparse_hmm_cpu.h) and the CUDA one are tested against it.
//
//   // emissions: T x graph.columns.size() log-likelihoods
//   GMM_ASSIGN_OR_RETURN(GraphPosteriors post, GraphForwardBackwardReference(graph, emissions));
//   GMM_ASSIGN_OR_RETURN(ViterbiPath best, GraphViterbiReference(graph, emissions));
//
// With b_t(j) = emissions[t][emission[j]], w(i->j) the arc weights, pi/phi
// the initial/final weights (states without one: -inf):
//   alpha_0(j) = pi_j + b_0(j)
//   alpha_t(j) = logsumexp_{arcs i->j} (alpha_{t-1}(i) + w(i->j)) + b_t(j)
//   beta_{T-1}(i) = phi_i,  beta_t(i) = logsumexp_{arcs i->j} (w(i->j) + b_{t+1}(j) + beta_{t+1}(j))
//   log p(O) = logsumexp_i (alpha_{T-1}(i) + phi_i)
//   gamma_t(i) = exp(alpha_t(i) + beta_t(i) - log p(O))
//   arc_counts[a: i->j] = sum_{t<T-1} exp(alpha_t(i) + w + b_{t+1}(j) + beta_{t+1}(j) - log p(O))
//   final_counts[k] = exp(alpha_{T-1}(f_k) + phi_{f_k} - log p(O))
// Viterbi: the same with max; ties go to the lowest source state (per arc
// list order, which is by source) and, at the end, to the lowest final
// state index in final_states order.
//
// Errors: INVALID_ARGUMENT for a broken graph (ValidateHmmGraph), no
// frames, a column count other than the graph's, a NaN or +inf score;
// FAILED_PRECONDITION when no path has non-zero probability (fewer frames
// than MinFrames, or -inf emissions on every reachable state of a frame).
#ifndef GMMSCORE_KERNELS_HMM_SPARSE_HMM_REFERENCE_H_
#define GMMSCORE_KERNELS_HMM_SPARSE_HMM_REFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/hmm_reference.h"

namespace gmmscore {

struct GraphPosteriors {
  double log_likelihood = 0.0;
  std::vector<double> gamma;         // T x num_states (empty when not asked for)
  std::vector<double> arc_counts;    // per arc, in the graph's arc order
  std::vector<double> final_counts;  // per final state, in final_states order
};

absl::StatusOr<GraphPosteriors> GraphForwardBackwardReference(const HmmGraph& graph, ConstMatrixView emissions);
absl::StatusOr<ViterbiPath> GraphViterbiReference(const HmmGraph& graph, ConstMatrixView emissions);

// The INVALID_ARGUMENT checks above on one utterance's emissions.
absl::Status ValidateGraphEmissions(const HmmGraph& graph, ConstMatrixView emissions);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPARSE_HMM_REFERENCE_H_
