// Launchers of the batched graph recursions (graph_hmm_kernels.cu): one CTA
// per utterance (a GraphUtterance), its threads over the graph's states,
// frames in sequence with one barrier each; the two frames in flight in
// shared memory as float64 logs, the graph's arcs there too where they fit,
// the next frames' scores (and, backward, alphas) arriving through a
// cp.async ring. Internal to graph_hmm_cuda.cc.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_KERNELS_H_
#define GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/hmm/cuda/graph_batch_plan.h"

namespace gmmscore::graph_cuda {

// Per-utterance status bits the kernels raise (status[index]).
inline constexpr int32_t kNoPath = 1;    // every path has probability zero
inline constexpr int32_t kBadScore = 2;  // a score the graph reads is NaN or +inf

// Device pointers of one launch: the GraphLayout's arrays, the scores, and
// the per-utterance results (indexed by GraphUtterance::index).
struct GraphDeviceArrays {
  const GraphUtterance* ctas = nullptr;  // the chunk's; a launch starts at group.first
  const float* scores = nullptr;
  const int32_t* in_begin = nullptr;
  const GraphArc* in_arcs = nullptr;
  const int32_t* out_begin = nullptr;
  const GraphArc* out_arcs = nullptr;
  const int32_t* score_column = nullptr;
  const float* initial_weight = nullptr;
  const float* final_weight = nullptr;
  const int32_t* final_states = nullptr;
  const float* final_state_weight = nullptr;
  int32_t* status = nullptr;
  double* log_likelihood = nullptr;
};

// Viterbi: backpointers (uint8 or uint16 indices into a state's incoming
// arcs, frames x states per utterance at scratch_offset) and the traceback
// on the device into paths[frame_offset ...].
absl::Status LaunchViterbi(const GraphDeviceArrays& arrays, const GraphLaunchGroup& group, bool wide_backpointers,
                           void* backpointers, int32_t* paths, cudaStream_t stream);

// Forward-backward: alpha in `alpha_gamma` and the scores read in
// `saved_scores` (frames x states each, at scratch_offset), alpha
// overwritten with gamma when want_gamma; arc counts per outgoing arc
// (GraphLayout::out_arcs order) and final counts per final state. With
// float32_log_add, logsumexp's exponentials and log1p and the posteriors'
// exponentials are taken in float32.
absl::Status LaunchForwardBackward(const GraphDeviceArrays& arrays, const GraphLaunchGroup& group,
                                   bool float32_log_add, bool want_gamma, double* alpha_gamma, float* saved_scores,
                                   double* arc_counts, double* final_counts, cudaStream_t stream);

}  // namespace gmmscore::graph_cuda

#endif  // GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_KERNELS_H_
