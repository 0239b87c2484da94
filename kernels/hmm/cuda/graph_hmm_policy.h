// Tuning of the batched graph recursions (graph_hmm_kernels.cu), apart from
// the kernels: one CTA per utterance, threads over its states, frames in
// sequence. Internal to graph_hmm_cuda.cc and graph_batch_plan.cc.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_POLICY_H_
#define GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_POLICY_H_

namespace gmmscore::graph_cuda {

// Measurements below: graph_hmm_bench on an H100 (batch case: 1000
// utterance graphs of ~307 states, 700 frames; long: one of 3009 states,
// 3000 frames), scores gathered from 5000-wide device rows.

// Threads per CTA. Utterances share a launch by size class: the smallest
// power of two in [kMinThreads, kMaxThreads] that gives each thread at most
// kStatesPerThread states; a launch then takes the fewest whole warps that
// do so for its largest graph (192 threads for the batch case, not 256: idle
// threads still hold registers and keep CTAs from sharing an SM). A frame's
// step is one pass over a thread's states and one barrier, so few states per
// thread keep the step short (the single long utterance is bound by one
// SM's issue rate: 1024 threads, 3 states each). Classes run side by side
// on their own streams.
inline constexpr int kStatesPerThread = 2;
inline constexpr int kMinThreads = 32;
inline constexpr int kMaxThreads = 1024;

// Frames of emission scores (and, going backward, of alpha and the saved
// scores) each thread has in flight through cp.async. Viterbi is bound by
// its gathers from the aligner's wide score rows (batch case: 2.0 TB/s, 61%
// of the H100's), so it keeps four frames in flight; the shallow ring is
// for graphs whose deep one does not fit. Forward-backward's steps are
// longer (it is bound by its float64 arithmetic) and it keeps more per
// frame in shared memory: a third frame would cost the batch case a CTA
// per SM. Both from shared-memory arithmetic and ncu, not a sweep.
inline constexpr int kViterbiDeepRing = 4;
inline constexpr int kForwardBackwardDeepRing = 2;
inline constexpr int kShallowRing = 2;

// Registers per forward-backward thread: unbounded, the float64 exp/log1p
// code takes 64 (at most five 192-thread CTAs an SM); at 48 ptxas reports
// no spills and six fit. From ptxas -v and ncu's occupancy, not a sweep.
inline constexpr int kForwardBackwardRegisters = 48;

// Each CTA copies its graph's arcs into shared memory where they fit
// (GraphBatchOptions::graphs_in_shared_memory): batch case, Viterbi 4.26
// against 5.09 ms, forward-backward 11.0 against 12.4 ms with the arcs read
// through L1 (whose hit rate the score gathers keep near 16%).

// Share of the device's free memory a call plans to take when the caller
// sets no limit: the rest is left to the allocator's rounding and to the
// scorer beside it.
inline constexpr double kFreeMemoryShare = 0.85;

}  // namespace gmmscore::graph_cuda

#endif  // GMMSCORE_KERNELS_HMM_CUDA_GRAPH_HMM_POLICY_H_
