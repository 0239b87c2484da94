// Forward-backward and Viterbi over a batch of sparse HMM graphs
// (hmm_graph.h) on a CUDA device: forced alignment and Baum-Welch of many
// utterances at once, each with its own graph and length. The recursions
// and their results are those of sparse_hmm_reference.h.
//
//   // Scores already on the device (the aligner scored every model state of
//   // every frame of the batch into one matrix):
//   DeviceScores scores{d_scores, rows, model_states, row_stride, first_row, frames};
//   GMM_ASSIGN_OR_RETURN(GraphBatchPaths best, GraphViterbiOnDevice(graphs, scores, stream));
//   // Or from host matrices, emissions[u] being T_u x graphs[u]->columns.size():
//   GMM_ASSIGN_OR_RETURN(GraphBatchPosteriors post, GraphForwardBackwardCuda(graphs, emissions, {.want_gamma = true}));
//
// How: one CTA per utterance, its threads over the graph's states, frames
// in sequence with one barrier each; the previous frame and the graph's
// arcs in shared memory, the next frames' scores arriving ahead through
// cp.async; Viterbi keeps one-byte backpointers and traces back on the
// device. Utterances of similar size share a launch; launches of different
// sizes run side by side. The host entries upload their matrices and run
// the same kernels (graph_hmm_policy.h has the tuning and its measurements).
//
// Precision: float64 logs throughout (no per-frame scaling), so Viterbi
// performs the reference's additions in its order and returns the same
// path, ties included. Forward-backward against the reference (graph_error
// lines of graph_hmm_cuda_test, H100): log-likelihood within 1e-15
// relative, gamma 5e-12, arc counts 1e-10 absolute. With float32_log_add
// the logsumexps' exponentials and log1p and the posteriors' exponentials
// are taken in float32: 4e-11 relative, gamma 3e-7, arc counts 2e-6, for
// a fifth less device time (graph_hmm_bench).
//
// Memory: per utterance and frame, 12 bytes a state for forward-backward
// (alpha then gamma in float64, and the scores read, saved for the backward
// pass) or 1 byte (2 where a state has more than 256 incoming arcs) of
// backpointers for Viterbi, plus the host entries' packed scores; a batch
// that does not fit is run in chunks. One CTA's shared memory holds its
// graph's two frames and score ring, for forward-backward also its arc
// counts and alpha ring: 32 bytes a state for Viterbi, 40 a state and 8 an
// arc for forward-backward (3009 states, 7142 arcs: 96 and 177 KB of the
// H100's 227), plus 4 a state and 8 an arc for the arcs where they fit.
//
// Errors: INVALID_ARGUMENT naming the first utterance whose graph or scores
// are bad (ValidateHmmGraph, ValidateGraphEmissions; for device scores:
// rows outside the matrix, a model state outside its columns, and, found on
// the device, a NaN or +inf score that the graph reads), or batch sizes that
// disagree; FAILED_PRECONDITION naming the first utterance that no path of
// its graph can produce; UNAVAILABLE without the device; RESOURCE_EXHAUSTED
// when one utterance alone does not fit the memory, or its graph not one
// CTA's shared memory; INTERNAL for other CUDA failures. On error nothing
// of the results is returned.
//
// Thread safety: calls are independent; each sets the calling thread's
// current device to options.device.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_CUDA_H_
#define GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_CUDA_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/hmm_reference.h"
#include "kernels/hmm/sparse_hmm_reference.h"

namespace gmmscore {

struct GraphBatchOptions {
  int device = 0;
  bool want_gamma = false;       // forward-backward: also the T x N state posteriors
  bool float32_log_add = false;  // forward-backward: faster, less exact (Precision above)
  // Device memory a call may take for its per-frame buffers and packed
  // scores; 0: kFreeMemoryShare of what is free (graph_hmm_policy.h).
  int64_t memory_limit_bytes = 0;
  // Each CTA copies its graph's arcs into shared memory where they fit;
  // false leaves them in global memory (for measurement).
  bool graphs_in_shared_memory = true;
};

struct GraphBatchPosteriors {
  // In the callers' order: log_likelihood, arc_counts (graph arc order),
  // final_counts (final_states order); gamma (T x N) only with want_gamma.
  std::vector<GraphPosteriors> utterances;
  double device_seconds = 0.0;  // the recursions alone (CUDA events), without uploads and copies back
};

struct GraphBatchPaths {
  std::vector<ViterbiPath> utterances;  // in the callers' order
  double device_seconds = 0.0;
};

// Scores of model states in one device matrix: utterance u's frame t,
// model state m at data[(first_row[u] + t) * row_stride + m]. Graph u's
// emission column c reads model state graphs[u]->columns[c]. Utterances
// may share or overlap rows. The caller keeps the matrix alive and
// unchanged until the call returns.
struct DeviceScores {
  const float* data = nullptr;  // device memory on options.device
  int64_t rows = 0;             // frames in the matrix
  int64_t model_states = 0;     // valid columns of a row
  int64_t row_stride = 0;       // floats from one row to the next, >= model_states
  std::vector<int64_t> first_row;  // per utterance
  std::vector<int64_t> frames;     // per utterance, >= 1
};

// Host entries: emissions[u] is T_u x graphs[u]->columns.size() (strides
// allowed), uploaded in chunks. Block until the results are on the host.
absl::StatusOr<GraphBatchPosteriors> GraphForwardBackwardCuda(absl::Span<const HmmGraph* const> graphs,
                                                              absl::Span<const ConstMatrixView> emissions,
                                                              const GraphBatchOptions& options = {});
absl::StatusOr<GraphBatchPaths> GraphViterbiCuda(absl::Span<const HmmGraph* const> graphs,
                                                 absl::Span<const ConstMatrixView> emissions, int device = 0);

// Device entries: the kernels run on `stream` (after what the caller queued
// there, e.g. the scoring) and read the scores in place; the call returns
// once the results are on the host.
absl::StatusOr<GraphBatchPosteriors> GraphForwardBackwardOnDevice(absl::Span<const HmmGraph* const> graphs,
                                                                  const DeviceScores& scores, cudaStream_t stream,
                                                                  const GraphBatchOptions& options = {});
absl::StatusOr<GraphBatchPaths> GraphViterbiOnDevice(absl::Span<const HmmGraph* const> graphs,
                                                     const DeviceScores& scores, cudaStream_t stream,
                                                     const GraphBatchOptions& options = {});

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_CUDA_H_
