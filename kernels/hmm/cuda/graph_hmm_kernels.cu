#include "kernels/hmm/cuda/graph_hmm_kernels.h"

#include <cuda_pipeline.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/hmm/cuda/graph_hmm_policy.h"

namespace gmmscore::graph_cuda {
namespace {

// Posterior terms under exp(-80) (2e-35) are not added: a count sums at
// most a few thousand of them.
constexpr double kNegligible = -80.0;

template <bool kFloat32>
__device__ __forceinline__ double ExpOf(double x) {
  if constexpr (kFloat32) {
    return static_cast<double>(__expf(static_cast<float>(x)));
  } else {
    return exp(x);
  }
}

// log(1 + x) for the x in [0, terms - 1] that a logsumexp leaves once its
// largest term is taken out.
template <bool kFloat32>
__device__ __forceinline__ double Log1pOf(double x) {
  if constexpr (kFloat32) {
    return static_cast<double>(log1pf(static_cast<float>(x)));
  } else {
    return log1p(x);
  }
}

// Online logsumexp in float64 (the total over a few final states): -inf
// terms are skipped, so no -inf - -inf; -inf when empty.
struct LogSum {
  double max = -INFINITY;
  double sum = 0.0;

  __device__ __forceinline__ void Add(double v) {
    if (v > max) {
      sum = sum * exp(max - v) + 1.0;
      max = v;
    } else if (v > -INFINITY) {
      sum += exp(v - max);
    }
  }
  __device__ __forceinline__ double Value() const { return max + log(sum); }
};

// A CTA's dynamic shared memory, handed out in order: 8-byte arrays first.
struct SharedCarver {
  unsigned char* at;
  template <typename T>
  __device__ __forceinline__ T* Take(int64_t count) {
    T* p = reinterpret_cast<T*>(at);
    at += count * static_cast<int64_t>(sizeof(T));
    return p;
  }
};

// The arcs a CTA walks, as a CSR: arcs[First(j) .. End(j)) are state j's.
struct ArcLists {
  const int32_t* begin;  // per state, + 1: absolute arc indices (GraphLayout's)
  const GraphArc* arcs;  // the utterance's own
  int32_t base;          // its first arc's absolute index
  __device__ __forceinline__ int First(int j) const { return begin[j] - base; }
  __device__ __forceinline__ int End(int j) const { return begin[j + 1] - base; }
};

// The utterance's incoming or outgoing arc lists: with kSharedGraph copied
// into the CTA's regions (readable after the next barrier), else where they lie.
template <bool kSharedGraph>
__device__ __forceinline__ ArcLists ArcsOf(const int32_t* begin, const GraphArc* arcs, const GraphUtterance& u,
                                           GraphArc* arc_region, int32_t* begin_region) {
  const int32_t* own_begin = begin + u.state_offset;
  const GraphArc* own_arcs = arcs + u.arc_offset;
  if constexpr (kSharedGraph) {
    for (int k = threadIdx.x; k <= u.num_states; k += blockDim.x) begin_region[k] = own_begin[k];
    for (int k = threadIdx.x; k < u.num_arcs; k += blockDim.x) arc_region[k] = own_arcs[k];
    return {begin_region, arc_region, u.arc_offset};
  } else {
    return {own_begin, own_arcs, u.arc_offset};
  }
}

// Queues this thread's states' scores of one frame into a ring slot.
__device__ __forceinline__ void FetchScores(float* slot, const float* row, const int32_t* __restrict__ column, int n) {
  for (int j = threadIdx.x; j < n; j += blockDim.x) __pipeline_memcpy_async(slot + j, row + __ldg(column + j), 4);
}

// Going backward: a frame's alphas and the scores the forward pass saved.
__device__ __forceinline__ void FetchBackward(double* alpha_slot, const double* alpha_row, float* score_slot,
                                              const float* saved_row, int n) {
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    __pipeline_memcpy_async(alpha_slot + j, alpha_row + j, 8);
    __pipeline_memcpy_async(score_slot + j, saved_row + j, 4);
  }
}

// delta_t(j) = max over arcs i->j of (delta_{t-1}(i) + w) + b_t(j) in float64,
// the reference's operations in its order, so the same ties break the same
// way; then the best final state and the traceback by thread 0.
template <int kRing, bool kSharedGraph, typename BackPointer>
__global__ void __launch_bounds__(kMaxThreads)
    ViterbiKernel(GraphDeviceArrays g, BackPointer* __restrict__ backpointers, int32_t* __restrict__ paths) {
  const GraphUtterance u = g.ctas[blockIdx.x];
  const int n = u.num_states, frames = u.num_frames;
  extern __shared__ __align__(16) unsigned char shared[];
  SharedCarver carve{shared};
  double* delta = carve.Take<double>(2 * n);  // frames t - 1 and t
  GraphArc* arc_region = carve.Take<GraphArc>(kSharedGraph ? u.num_arcs : 0);
  float* ring = carve.Take<float>(kRing * n);  // scores
  int32_t* begin_region = carve.Take<int32_t>(kSharedGraph ? n + 1 : 0);
  const float* scores = g.scores + u.scores_offset;
  const int32_t* __restrict__ column = g.score_column + u.state_offset;
  const float* __restrict__ initial = g.initial_weight + u.state_offset;
  BackPointer* back = backpointers + u.scratch_offset;
  const ArcLists in = ArcsOf<kSharedGraph>(g.in_begin, g.in_arcs, u, arc_region, begin_region);  // used from t = 1

  for (int f = 0; f < kRing - 1; ++f) {
    if (f < frames) FetchScores(ring + f * n, scores + f * u.row_stride, column, n);
    __pipeline_commit();
  }
  bool bad = false;
  for (int t = 0; t < frames; ++t) {
    const int ahead = t + kRing - 1;
    if (ahead < frames) FetchScores(ring + (ahead % kRing) * n, scores + ahead * u.row_stride, column, n);
    __pipeline_commit();
    __pipeline_wait_prior(kRing - 1);
    const float* b = ring + (t % kRing) * n;
    const double* prev = delta + ((t + 1) & 1) * n;
    double* cur = delta + (t & 1) * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float score = b[j];
      bad |= !(score < INFINITY);
      double best;
      if (t == 0) {
        best = initial[j];
      } else {
        best = -INFINITY;
        int arg = 0;
        const int first = in.First(j), end = in.End(j);
        for (int a = first; a < end; ++a) {
          const GraphArc arc = in.arcs[a];
          const double v = prev[arc.state] + static_cast<double>(arc.log_weight);
          if (v > best) {
            best = v;
            arg = a - first;
          }
        }
        back[int64_t{t} * n + j] = static_cast<BackPointer>(arg);
      }
      cur[j] = best + static_cast<double>(score);
    }
    __syncthreads();
  }
  if (bad) atomicOr(g.status + u.index, kBadScore);
  if (threadIdx.x != 0) return;
  const double* last = delta + ((frames - 1) & 1) * n;
  double best = -INFINITY;
  int state = -1;
  for (int k = 0; k < u.num_finals; ++k) {
    const int f = g.final_states[u.final_offset + k];
    const double v = last[f] + static_cast<double>(g.final_state_weight[u.final_offset + k]);
    if (v > best) {
      best = v;
      state = f;
    }
  }
  g.log_likelihood[u.index] = best;
  if (state < 0) {
    atomicOr(g.status + u.index, kNoPath);
    return;
  }
  int32_t* path = paths + u.frame_offset;
  for (int t = frames - 1; t > 0; --t) {
    path[t] = state;
    state = in.arcs[in.First(state) + back[int64_t{t} * n + state]].state;
  }
  path[0] = state;
}

// Forward in float64 logs (no scaling needed: |log alpha| < 1e6 keeps
// 1e-10), alpha_t and the scores read kept in the scratch; log p(O) over
// the final states; then backward over the outgoing arcs, each thread
// owning its states' beta, gamma and outgoing arcs' counts (in shared
// memory, no atomics). Each logsumexp finds its largest term first, so that
// term costs no exponential (a one-arc state none at all), and backward the
// same exponentials give beta, the arc counts and gamma.
template <int kRing, bool kSharedGraph, bool kFloat32>
__global__ void __maxnreg__(kForwardBackwardRegisters)
    ForwardBackwardKernel(GraphDeviceArrays g, bool want_gamma, double* __restrict__ alpha_gamma,
                          float* __restrict__ saved_scores, double* __restrict__ arc_counts,
                          double* __restrict__ final_counts) {
  const GraphUtterance u = g.ctas[blockIdx.x];
  const int n = u.num_states, frames = u.num_frames;
  extern __shared__ __align__(16) unsigned char shared[];
  SharedCarver carve{shared};
  double* frame = carve.Take<double>(2 * n);  // alpha, then b + beta, of frames t and t -+ 1
  double* counts = carve.Take<double>(u.num_arcs);  // by outgoing arc
  double* alpha_ring = carve.Take<double>(kRing * n);  // backward
  GraphArc* arc_region = carve.Take<GraphArc>(kSharedGraph ? u.num_arcs : 0);
  float* score_ring = carve.Take<float>(kRing * n);
  int32_t* begin_region = carve.Take<int32_t>(kSharedGraph ? n + 1 : 0);
  __shared__ double total_shared;
  const float* scores = g.scores + u.scores_offset;
  const int32_t* __restrict__ column = g.score_column + u.state_offset;
  double* alpha = alpha_gamma + u.scratch_offset;
  float* saved = saved_scores + u.scratch_offset;
  const ArcLists in = ArcsOf<kSharedGraph>(g.in_begin, g.in_arcs, u, arc_region, begin_region);  // used from t = 1

  for (int f = 0; f < kRing - 1; ++f) {
    if (f < frames) FetchScores(score_ring + f * n, scores + f * u.row_stride, column, n);
    __pipeline_commit();
  }
  bool bad = false;
  for (int t = 0; t < frames; ++t) {
    const int ahead = t + kRing - 1;
    if (ahead < frames) FetchScores(score_ring + (ahead % kRing) * n, scores + ahead * u.row_stride, column, n);
    __pipeline_commit();
    __pipeline_wait_prior(kRing - 1);
    const float* b = score_ring + (t % kRing) * n;
    const double* prev = frame + ((t + 1) & 1) * n;
    double* cur = frame + (t & 1) * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float score = b[j];
      bad |= !(score < INFINITY);
      double value = -INFINITY;
      if (t == 0) {
        value = g.initial_weight[u.state_offset + j];
      } else {
        const int first = in.First(j), end = in.End(j);
        double best = -INFINITY;
        for (int a = first; a < end; ++a) {
          best = fmax(best, prev[in.arcs[a].state] + static_cast<double>(in.arcs[a].log_weight));
        }
        if (best > -INFINITY) {
          double rest = 0.0;
          bool took = false;
          for (int a = first; a < end; ++a) {
            const double v = prev[in.arcs[a].state] + static_cast<double>(in.arcs[a].log_weight);
            if (v == best && !took) {
              took = true;
            } else {
              rest += ExpOf<kFloat32>(v - best);
            }
          }
          value = rest > 0.0 ? best + Log1pOf<kFloat32>(rest) : best;
        }
      }
      value += static_cast<double>(score);
      cur[j] = value;
      alpha[int64_t{t} * n + j] = value;
      saved[int64_t{t} * n + j] = score;
    }
    __syncthreads();
  }
  if (bad) atomicOr(g.status + u.index, kBadScore);
  // The outgoing arcs take the incoming ones' place (every read of those is
  // behind the last barrier); readable after the next.
  const ArcLists out = ArcsOf<kSharedGraph>(g.out_begin, g.out_arcs, u, arc_region, begin_region);
  const double* last = frame + ((frames - 1) & 1) * n;
  if (threadIdx.x == 0) {
    LogSum sum;
    for (int k = 0; k < u.num_finals; ++k) {
      sum.Add(last[g.final_states[u.final_offset + k]] + static_cast<double>(g.final_state_weight[u.final_offset + k]));
    }
    total_shared = sum.Value();
    g.log_likelihood[u.index] = total_shared;
    if (!(total_shared > -INFINITY)) atomicOr(g.status + u.index, kNoPath);
  }
  __syncthreads();
  const double total = total_shared;
  if (!(total > -INFINITY)) return;  // the whole CTA: no posteriors without a path
  for (int k = threadIdx.x; k < u.num_finals; k += blockDim.x) {
    const double v = last[g.final_states[u.final_offset + k]] +
                     static_cast<double>(g.final_state_weight[u.final_offset + k]);
    final_counts[u.final_offset + k] = ExpOf<kFloat32>(v - total);
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    for (int a = out.First(i); a < out.End(i); ++a) counts[a] = 0.0;
  }
  __threadfence_block();  // this thread's alpha stores before its cp.async reads of them
  __syncthreads();        // `last` is overwritten below

  for (int f = 0; f < kRing - 1; ++f) {
    const int at = frames - 1 - f;
    if (at >= 0) {
      FetchBackward(alpha_ring + (at % kRing) * n, alpha + int64_t{at} * n, score_ring + (at % kRing) * n,
                    saved + int64_t{at} * n, n);
    }
    __pipeline_commit();
  }
  for (int t = frames - 1; t >= 0; --t) {
    const int ahead = t - (kRing - 1);
    if (ahead >= 0) {
      FetchBackward(alpha_ring + (ahead % kRing) * n, alpha + int64_t{ahead} * n, score_ring + (ahead % kRing) * n,
                    saved + int64_t{ahead} * n, n);
    }
    __pipeline_commit();
    __pipeline_wait_prior(kRing - 1);
    const double* alpha_t = alpha_ring + (t % kRing) * n;
    const float* b = score_ring + (t % kRing) * n;
    const double* next = frame + ((t + 1) & 1) * n;  // b_{t+1} + beta_{t+1}
    double* cur = frame + (t & 1) * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const double alpha_i = alpha_t[i];
      double beta = -INFINITY, gamma = 0.0;
      if (t == frames - 1) {
        beta = g.final_weight[u.state_offset + i];
        gamma = ExpOf<kFloat32>(alpha_i + beta - total);
      } else {
        const int first = out.First(i), end = out.End(i);
        double best = -INFINITY;
        for (int a = first; a < end; ++a) {
          best = fmax(best, static_cast<double>(out.arcs[a].log_weight) + next[out.arcs[a].state]);
        }
        if (best > -INFINITY) {
          // exp(alpha_i + w + b_{t+1}(j) + beta_{t+1}(j) - total) = scale * exp(v - best).
          const double lead = alpha_i - total + best;
          const bool counted = lead > kNegligible;
          const double scale = counted ? ExpOf<kFloat32>(lead) : 0.0;
          double rest = 0.0;
          bool took = false;
          for (int a = first; a < end; ++a) {
            const double v = static_cast<double>(out.arcs[a].log_weight) + next[out.arcs[a].state];
            double e = 1.0;
            if (v == best && !took) {
              took = true;
            } else {
              e = ExpOf<kFloat32>(v - best);
              rest += e;
            }
            if (counted) counts[a] += scale * e;
          }
          beta = rest > 0.0 ? best + Log1pOf<kFloat32>(rest) : best;
          gamma = scale * (1.0 + rest);  // exp(alpha_i + beta - total)
        }
      }
      if (want_gamma) alpha[int64_t{t} * n + i] = gamma;
      cur[i] = beta + static_cast<double>(b[i]);
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    for (int a = out.First(i); a < out.End(i); ++a) arc_counts[u.arc_offset + a] = counts[a];
  }
}

template <typename Kernel, typename... Args>
absl::Status Launch(Kernel kernel, const GraphLaunchGroup& group, cudaStream_t stream, const char* what,
                    Args... args) {
  GMM_RETURN_IF_ERROR(AllowDynamicSharedMemory(reinterpret_cast<const void*>(kernel), group.shared_bytes));
  kernel<<<group.count, group.threads, group.shared_bytes, stream>>>(args...);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), what);
  return absl::OkStatus();
}

constexpr const char* kViterbiWhat = "launch graph Viterbi kernel";
constexpr const char* kForwardBackwardWhat = "launch graph forward-backward kernel";

template <int kRing, bool kSharedGraph>
absl::Status LaunchViterbiAs(const GraphDeviceArrays& at, const GraphLaunchGroup& group, bool wide_backpointers,
                             void* backpointers, int32_t* paths, cudaStream_t stream) {
  if (wide_backpointers) {
    return Launch(ViterbiKernel<kRing, kSharedGraph, uint16_t>, group, stream, kViterbiWhat, at,
                  static_cast<uint16_t*>(backpointers), paths);
  }
  return Launch(ViterbiKernel<kRing, kSharedGraph, uint8_t>, group, stream, kViterbiWhat, at,
                static_cast<uint8_t*>(backpointers), paths);
}

template <int kRing, bool kSharedGraph>
absl::Status LaunchForwardBackwardAs(const GraphDeviceArrays& at, const GraphLaunchGroup& group, bool float32_log_add,
                                     bool want_gamma, double* alpha_gamma, float* saved_scores, double* arc_counts,
                                     double* final_counts, cudaStream_t stream) {
  if (float32_log_add) {
    return Launch(ForwardBackwardKernel<kRing, kSharedGraph, true>, group, stream, kForwardBackwardWhat, at,
                  want_gamma, alpha_gamma, saved_scores, arc_counts, final_counts);
  }
  return Launch(ForwardBackwardKernel<kRing, kSharedGraph, false>, group, stream, kForwardBackwardWhat, at,
                want_gamma, alpha_gamma, saved_scores, arc_counts, final_counts);
}

}  // namespace

absl::Status LaunchViterbi(const GraphDeviceArrays& arrays, const GraphLaunchGroup& group, bool wide_backpointers,
                           void* backpointers, int32_t* paths, cudaStream_t stream) {
  if (group.count == 0) return absl::OkStatus();
  GraphDeviceArrays at = arrays;
  at.ctas += group.first;
  const auto launch = [&](auto ring, auto shared_graph) {
    return LaunchViterbiAs<decltype(ring)::value, decltype(shared_graph)::value>(at, group, wide_backpointers,
                                                                                 backpointers, paths, stream);
  };
  using Deep = std::integral_constant<int, kViterbiDeepRing>;
  using Shallow = std::integral_constant<int, kShallowRing>;
  if (group.ring == kViterbiDeepRing) {
    return group.shared_graph ? launch(Deep(), std::true_type()) : launch(Deep(), std::false_type());
  }
  if (group.ring == kShallowRing) {
    return group.shared_graph ? launch(Shallow(), std::true_type()) : launch(Shallow(), std::false_type());
  }
  return absl::InternalError("graph Viterbi: no kernel for this ring depth");
}

absl::Status LaunchForwardBackward(const GraphDeviceArrays& arrays, const GraphLaunchGroup& group,
                                   bool float32_log_add, bool want_gamma, double* alpha_gamma, float* saved_scores,
                                   double* arc_counts, double* final_counts, cudaStream_t stream) {
  if (group.count == 0) return absl::OkStatus();
  GraphDeviceArrays at = arrays;
  at.ctas += group.first;
  const auto launch = [&](auto ring, auto shared_graph) {
    return LaunchForwardBackwardAs<decltype(ring)::value, decltype(shared_graph)::value>(
        at, group, float32_log_add, want_gamma, alpha_gamma, saved_scores, arc_counts, final_counts, stream);
  };
  static_assert(kForwardBackwardDeepRing == kShallowRing, "one ring depth for forward-backward (policy)");
  using Ring = std::integral_constant<int, kForwardBackwardDeepRing>;
  if (group.ring != kForwardBackwardDeepRing) {
    return absl::InternalError("graph forward-backward: no kernel for this ring depth");
  }
  return group.shared_graph ? launch(Ring(), std::true_type()) : launch(Ring(), std::false_type());
}

}  // namespace gmmscore::graph_cuda
