// The graph recursions of sparse_hmm_reference.h on the CPU, fast: a batch
// of utterances spread over a thread pool, each utterance's recursion
// streamlined (one exp per arc and one log per state and frame in the
// forward-backward, max-plus with 16-bit backpointers in Viterbi, two rows
// of beta instead of a T x N matrix).
//
//   std::vector<const HmmGraph*> graphs = ...;       // one per utterance
//   std::vector<ConstMatrixView> emissions = ...;    // T_u x graphs[u]->columns.size()
//   std::vector<absl::StatusOr<ViterbiPath>> paths = GraphViterbiCpu(graphs, emissions, &pool);
//
// Log space in float64 throughout, like the reference: nothing underflows,
// so a state far below the frame's best that later carries the best path is
// never lost (what scaled probabilities risk). Results equal the
// reference's to rounding (1e-9 relative in the tests); Viterbi breaks ties
// the same way, so paths are identical.
//
// Each utterance succeeds or fails alone: its entry holds the reference's
// error for it (INVALID_ARGUMENT, FAILED_PRECONDITION for no path), and
// INVALID_ARGUMENT when a state has more than 65535 incoming arcs (Viterbi).
// `pool` may be null (the calling thread does all). Thread-safe.
#ifndef GMMSCORE_KERNELS_HMM_SPARSE_HMM_CPU_H_
#define GMMSCORE_KERNELS_HMM_SPARSE_HMM_CPU_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/core/thread_pool.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/sparse_hmm_reference.h"

namespace gmmscore {

std::vector<absl::StatusOr<ViterbiPath>> GraphViterbiCpu(absl::Span<const HmmGraph* const> graphs,
                                                         absl::Span<const ConstMatrixView> emissions,
                                                         ThreadPool* pool = nullptr);

// gamma is filled only with want_gamma (T x N per utterance).
std::vector<absl::StatusOr<GraphPosteriors>> GraphForwardBackwardCpu(absl::Span<const HmmGraph* const> graphs,
                                                                     absl::Span<const ConstMatrixView> emissions,
                                                                     bool want_gamma, ThreadPool* pool = nullptr);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPARSE_HMM_CPU_H_
