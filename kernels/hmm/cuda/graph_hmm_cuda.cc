#include "kernels/hmm/cuda/graph_hmm_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/hmm/cuda/graph_batch_plan.h"
#include "kernels/hmm/cuda/graph_hmm_kernels.h"
#include "kernels/hmm/cuda/graph_hmm_policy.h"

namespace gmmscore {
namespace {

using graph_cuda::GraphArc;
using graph_cuda::GraphChunk;
using graph_cuda::GraphDeviceArrays;
using graph_cuda::GraphLayout;
using graph_cuda::GraphPass;
using graph_cuda::GraphUtterance;

constexpr int64_t kMaxFrames = std::numeric_limits<int32_t>::max();
// Shared memory the kernels' own (static) variables and the runtime keep
// beside the dynamic part.
constexpr int kReservedSharedBytes = 1024;

std::string Utterance(size_t u) { return absl::StrCat("utterance ", u); }

absl::Status ValidateHostBatch(absl::Span<const HmmGraph* const> graphs, absl::Span<const ConstMatrixView> emissions) {
  if (graphs.size() != emissions.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graphs.size(), " graphs but ", emissions.size(), " emission matrices"));
  }
  for (size_t u = 0; u < graphs.size(); ++u) {
    if (graphs[u] == nullptr) return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": no graph"));
    GMM_RETURN_IF_ERROR(PrefixStatus(Utterance(u), ValidateGraphEmissions(*graphs[u], emissions[u])));
    if (emissions[u].rows > kMaxFrames) {
      return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": ", emissions[u].rows, " frames, at most ",
                                                     kMaxFrames));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDeviceBatch(absl::Span<const HmmGraph* const> graphs, const DeviceScores& scores) {
  if (scores.first_row.size() != graphs.size() || scores.frames.size() != graphs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(graphs.size(), " graphs but ", scores.first_row.size(),
                                                   " first rows and ", scores.frames.size(), " frame counts"));
  }
  if (graphs.empty()) return absl::OkStatus();
  if (scores.data == nullptr || scores.model_states < 1 || scores.row_stride < scores.model_states ||
      scores.rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("device scores: ", scores.rows, " rows of ", scores.model_states,
                                                   " model states, stride ", scores.row_stride,
                                                   (scores.data == nullptr ? ", no data" : "")));
  }
  for (size_t u = 0; u < graphs.size(); ++u) {
    if (graphs[u] == nullptr) return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": no graph"));
    const HmmGraph& g = *graphs[u];
    GMM_RETURN_IF_ERROR(PrefixStatus(Utterance(u), ValidateHmmGraph(g)));
    const int64_t first = scores.first_row[u], frames = scores.frames[u];
    if (frames < 1 || frames > kMaxFrames) {
      return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": ", frames, " frames"));
    }
    if (first < 0 || first > scores.rows - frames) {
      return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": rows [", first, ", ", first + frames,
                                                     ") are not all in the scores' ", scores.rows, " rows"));
    }
    for (int32_t m : g.columns) {
      if (m >= scores.model_states) {
        return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": its graph reads model state ", m,
                                                       ", the scores have ", scores.model_states));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SelectDevice(int device) {
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device));
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<DeviceBuffer<T>> Upload(const std::vector<T>& host) {
  return DeviceBuffer<T>::FromHost(host.data(), host.size());
}

template <typename T>
absl::Status Download(const T* device, size_t count, T* host) {
  if (count == 0) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpy(host, device, count * sizeof(T), cudaMemcpyDeviceToHost),
                           "copy graph results to host");
  return absl::OkStatus();
}

// All bytes 0xff: NaN for floating point, -1 for integers. Outputs start so,
// and a value the kernels fail to write stands out.
template <typename T>
absl::Status Poison(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
  if (buffer.size() == 0) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buffer.data(), 0xff, buffer.bytes(), stream), "poison graph outputs");
  return absl::OkStatus();
}

// The batch's graphs and per-utterance results on the device.
struct DeviceGraphs {
  DeviceBuffer<int32_t> in_begin, out_begin, score_column, final_states, status;
  DeviceBuffer<GraphArc> in_arcs, out_arcs;
  DeviceBuffer<float> initial_weight, final_weight, final_state_weight;
  DeviceBuffer<double> log_likelihood;

  GraphDeviceArrays Arrays(const GraphUtterance* ctas, const float* scores) const {
    return {ctas,
            scores,
            in_begin.data(),
            in_arcs.data(),
            out_begin.data(),
            out_arcs.data(),
            score_column.data(),
            initial_weight.data(),
            final_weight.data(),
            final_states.data(),
            final_state_weight.data(),
            status.data(),
            log_likelihood.data()};
  }
};

absl::StatusOr<DeviceGraphs> UploadGraphs(const GraphLayout& layout, cudaStream_t stream) {
  DeviceGraphs d;
  GMM_ASSIGN_OR_RETURN(d.in_begin, Upload(layout.in_begin));
  GMM_ASSIGN_OR_RETURN(d.out_begin, Upload(layout.out_begin));
  GMM_ASSIGN_OR_RETURN(d.score_column, Upload(layout.score_column));
  GMM_ASSIGN_OR_RETURN(d.final_states, Upload(layout.final_states));
  GMM_ASSIGN_OR_RETURN(d.in_arcs, Upload(layout.in_arcs));
  GMM_ASSIGN_OR_RETURN(d.out_arcs, Upload(layout.out_arcs));
  GMM_ASSIGN_OR_RETURN(d.initial_weight, Upload(layout.initial_weight));
  GMM_ASSIGN_OR_RETURN(d.final_weight, Upload(layout.final_weight));
  GMM_ASSIGN_OR_RETURN(d.final_state_weight, Upload(layout.final_state_weight));
  const int batch = layout.num_utterances();
  GMM_ASSIGN_OR_RETURN(d.status, DeviceBuffer<int32_t>::Allocate(batch));
  GMM_ASSIGN_OR_RETURN(d.log_likelihood, DeviceBuffer<double>::Allocate(batch));
  GMM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d.status.data(), 0, d.status.bytes(), stream), "clear graph status");
  GMM_RETURN_IF_ERROR(Poison(d.log_likelihood, stream));
  return d;
}

// One chunk's launch groups side by side: a stream each, forked from the
// caller's stream and joined back into it.
class SideStreams {
 public:
  absl::Status Fork(cudaStream_t parent, int count) {
    if (!forked_.get()) {
      GMM_ASSIGN_OR_RETURN(forked_, CudaEvent::Create());
    }
    while (static_cast<int>(streams_.size()) < count) {
      GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
      GMM_ASSIGN_OR_RETURN(CudaEvent done, CudaEvent::Create());
      streams_.push_back(std::move(stream));
      done_.push_back(std::move(done));
    }
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(forked_.get(), parent), "fork graph streams");
    for (int k = 0; k < count; ++k) {
      GMM_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams_[k].get(), forked_.get(), 0), "fork graph streams");
    }
    return absl::OkStatus();
  }
  absl::Status Join(cudaStream_t parent, int count) {
    for (int k = 0; k < count; ++k) {
      GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(done_[k].get(), streams_[k].get()), "join graph streams");
      GMM_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(parent, done_[k].get(), 0), "join graph streams");
    }
    return absl::OkStatus();
  }
  cudaStream_t stream(int k) const { return streams_[k].get(); }

 private:
  CudaEvent forked_;
  std::vector<CudaStream> streams_;
  std::vector<CudaEvent> done_;
};

// Where the scores are: on the device already, or host matrices to pack
// and upload chunk by chunk.
struct ScoreInput {
  const DeviceScores* device = nullptr;
  absl::Span<const ConstMatrixView> host;
};

// What a pass leaves on the host, in the batch's layout.
struct PassResult {
  std::vector<int64_t> frames;
  std::vector<int64_t> frame_offset;  // prefix sums of frames
  GraphLayout layout;
  std::vector<double> log_likelihood;
  std::vector<int32_t> paths;  // Viterbi: every utterance's frames, at frame_offset
  std::vector<double> arc_counts, final_counts;  // forward-backward: layout.out_arcs and final_states order
  std::vector<std::vector<double>> gamma;        // forward-backward with want_gamma
  double device_seconds = 0.0;
};

absl::StatusOr<int64_t> MemoryBudget(const GraphBatchOptions& options) {
  if (options.memory_limit_bytes > 0) return options.memory_limit_bytes;
  size_t free = 0, total = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total), "read free device memory");
  return static_cast<int64_t>(static_cast<double>(free) * graph_cuda::kFreeMemoryShare);
}

absl::StatusOr<int64_t> SharedBytesPerBlock() {
  int device = 0, bytes = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "read current device");
  GMM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                           "read shared memory per block");
  return int64_t{bytes} - kReservedSharedBytes;
}

// The first utterance, in the callers' order, that a kernel marked.
absl::Status CheckStatus(absl::Span<const HmmGraph* const> graphs, const std::vector<int32_t>& status,
                         const std::vector<int64_t>& frames) {
  for (size_t u = 0; u < status.size(); ++u) {
    if (status[u] & graph_cuda::kBadScore) {
      return absl::InvalidArgumentError(absl::StrCat(Utterance(u), ": a score its graph reads is NaN or +inf"));
    }
  }
  for (size_t u = 0; u < status.size(); ++u) {
    if (status[u] & graph_cuda::kNoPath) {
      return absl::FailedPreconditionError(absl::StrCat(
          Utterance(u), ": no path of its graph (", graphs[u]->num_states(), " states, at least ",
          graphs[u]->MinFrames(), " frames) can produce its ", frames[u], " frames"));
    }
  }
  return absl::OkStatus();
}

// Packs the chunk's host matrices (frames x columns each) where the plan
// put them, and uploads them.
absl::Status UploadChunkScores(const GraphChunk& chunk, absl::Span<const ConstMatrixView> host,
                               DeviceBuffer<float>& packed, cudaStream_t stream) {
  std::vector<float> staged(chunk.packed_floats);
  for (size_t k = 0; k < chunk.utterances.size(); ++k) {
    const ConstMatrixView& m = host[chunk.utterances[k]];
    float* out = staged.data() + chunk.packed_offset[k];
    for (int64_t t = 0; t < m.rows; ++t) std::copy_n(m.row(t), m.cols, out + t * m.cols);
  }
  if (staged.empty()) return absl::OkStatus();
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(packed.data(), staged.data(), staged.size() * sizeof(float),
                                           cudaMemcpyHostToDevice, stream),
                           "upload graph scores");
  // `staged` dies here: the copy must be done.
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "upload graph scores");
  return absl::OkStatus();
}

absl::StatusOr<PassResult> RunPass(GraphPass pass, absl::Span<const HmmGraph* const> graphs, const ScoreInput& input,
                                   cudaStream_t stream, const GraphBatchOptions& options) {
  const bool host = input.device == nullptr;
  const int batch = static_cast<int>(graphs.size());
  PassResult r;
  std::vector<int64_t> packed_floats, score_offset(batch), row_stride(batch);
  for (int u = 0; u < batch; ++u) {
    r.frames.push_back(host ? input.host[u].rows : input.device->frames[u]);
    if (host) packed_floats.push_back(input.host[u].rows * input.host[u].cols);
  }
  r.frame_offset.assign(batch + 1, 0);
  for (int u = 0; u < batch; ++u) r.frame_offset[u + 1] = r.frame_offset[u] + r.frames[u];
  GMM_ASSIGN_OR_RETURN(
      r.layout, BuildGraphLayout(graphs, host ? graph_cuda::ScoreColumns::kGraphColumns
                                              : graph_cuda::ScoreColumns::kModelStates));
  const GraphLayout& layout = r.layout;
  const bool viterbi = pass == GraphPass::kViterbi;
  if (viterbi && layout.max_in_degree > 65536) {
    return absl::ResourceExhaustedError(absl::StrCat("a state has ", layout.max_in_degree,
                                                     " incoming arcs; Viterbi takes at most 65536"));
  }
  const bool wide_backpointers = layout.max_in_degree > 256;

  GMM_ASSIGN_OR_RETURN(DeviceGraphs d, UploadGraphs(layout, stream));
  DeviceBuffer<int32_t> paths;
  DeviceBuffer<double> arc_counts, final_counts;
  if (viterbi) {
    GMM_ASSIGN_OR_RETURN(paths, DeviceBuffer<int32_t>::Allocate(r.frame_offset.back()));
    GMM_RETURN_IF_ERROR(Poison(paths, stream));
  } else {
    GMM_ASSIGN_OR_RETURN(arc_counts, DeviceBuffer<double>::Allocate(layout.out_arcs.size()));
    GMM_ASSIGN_OR_RETURN(final_counts, DeviceBuffer<double>::Allocate(layout.final_states.size()));
    GMM_RETURN_IF_ERROR(Poison(arc_counts, stream));
    GMM_RETURN_IF_ERROR(Poison(final_counts, stream));
  }

  graph_cuda::GraphPlanLimits limits;
  GMM_ASSIGN_OR_RETURN(limits.memory_bytes, MemoryBudget(options));
  GMM_ASSIGN_OR_RETURN(limits.shared_bytes, SharedBytesPerBlock());
  limits.scratch_element_bytes = viterbi ? (wide_backpointers ? 2 : 1) : 12;
  limits.shared_graphs = options.graphs_in_shared_memory;
  GMM_ASSIGN_OR_RETURN(graph_cuda::GraphPlan plan,
                       PlanGraphBatch(pass, layout, r.frames, packed_floats, limits));
  // Viterbi: backpointers. Forward-backward: alpha (then gamma), and the
  // scores the forward pass read, saved for the backward one.
  DeviceBuffer<unsigned char> scratch;
  DeviceBuffer<float> saved_scores, packed;
  GMM_ASSIGN_OR_RETURN(scratch, DeviceBuffer<unsigned char>::Allocate(
                                    plan.max_scratch_elements * (viterbi ? limits.scratch_element_bytes : 8)));
  if (!viterbi) {
    GMM_ASSIGN_OR_RETURN(saved_scores, DeviceBuffer<float>::Allocate(plan.max_scratch_elements));
  }
  GMM_ASSIGN_OR_RETURN(packed, DeviceBuffer<float>::Allocate(plan.max_packed_floats));
  double* alpha_gamma = reinterpret_cast<double*>(scratch.data());
  if (!host) {
    for (int u = 0; u < batch; ++u) {
      score_offset[u] = input.device->first_row[u] * input.device->row_stride;
      row_stride[u] = input.device->row_stride;
    }
  }
  if (!viterbi && options.want_gamma) r.gamma.resize(batch);

  SideStreams side;
  GMM_ASSIGN_OR_RETURN(CudaEvent started, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent finished, CudaEvent::Create());
  for (const GraphChunk& chunk : plan.chunks) {
    if (host) {
      GMM_RETURN_IF_ERROR(UploadChunkScores(chunk, input.host, packed, stream));
      for (size_t k = 0; k < chunk.utterances.size(); ++k) {
        score_offset[chunk.utterances[k]] = chunk.packed_offset[k];
        row_stride[chunk.utterances[k]] = input.host[chunk.utterances[k]].cols;
      }
    }
    const std::vector<GraphUtterance> ctas = DescribeChunk(chunk, layout, r.frames, score_offset, row_stride);
    GMM_ASSIGN_OR_RETURN(DeviceBuffer<GraphUtterance> d_ctas, Upload(ctas));
    const GraphDeviceArrays arrays = d.Arrays(d_ctas.data(), host ? packed.data() : input.device->data);
    const int groups = static_cast<int>(chunk.groups.size());
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(started.get(), stream), "record graph start");
    if (groups > 1) GMM_RETURN_IF_ERROR(side.Fork(stream, groups));
    for (int k = 0; k < groups; ++k) {
      const cudaStream_t on = groups > 1 ? side.stream(k) : stream;
      if (viterbi) {
        GMM_RETURN_IF_ERROR(graph_cuda::LaunchViterbi(arrays, chunk.groups[k], wide_backpointers, scratch.data(),
                                                      paths.data(), on));
      } else {
        GMM_RETURN_IF_ERROR(graph_cuda::LaunchForwardBackward(arrays, chunk.groups[k], options.float32_log_add,
                                                              options.want_gamma, alpha_gamma, saved_scores.data(),
                                                              arc_counts.data(), final_counts.data(), on));
      }
    }
    if (groups > 1) GMM_RETURN_IF_ERROR(side.Join(stream, groups));
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(finished.get(), stream), "record graph end");
    GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "graph recursions");
    float milliseconds = 0.0f;
    GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&milliseconds, started.get(), finished.get()), "time graph pass");
    r.device_seconds += milliseconds / 1e3;
    if (!r.gamma.empty()) {
      for (size_t k = 0; k < chunk.utterances.size(); ++k) {
        const int u = chunk.utterances[k];
        r.gamma[u].resize(r.frames[u] * layout.states(u));
        GMM_RETURN_IF_ERROR(Download(alpha_gamma + chunk.scratch_offset[k], r.gamma[u].size(), r.gamma[u].data()));
      }
    }
  }
  std::vector<int32_t> status(batch);
  r.log_likelihood.resize(batch);
  GMM_RETURN_IF_ERROR(Download(d.status.data(), status.size(), status.data()));
  GMM_RETURN_IF_ERROR(CheckStatus(graphs, status, r.frames));
  GMM_RETURN_IF_ERROR(Download(d.log_likelihood.data(), r.log_likelihood.size(), r.log_likelihood.data()));
  if (viterbi) {
    r.paths.resize(paths.size());
    GMM_RETURN_IF_ERROR(Download(paths.data(), paths.size(), r.paths.data()));
  } else {
    r.arc_counts.resize(arc_counts.size());
    r.final_counts.resize(final_counts.size());
    GMM_RETURN_IF_ERROR(Download(arc_counts.data(), arc_counts.size(), r.arc_counts.data()));
    GMM_RETURN_IF_ERROR(Download(final_counts.data(), final_counts.size(), r.final_counts.data()));
  }
  return r;
}

GraphBatchPaths ToPaths(PassResult& r) {
  GraphBatchPaths out;
  out.device_seconds = r.device_seconds;
  for (size_t u = 0; u < r.frames.size(); ++u) {
    ViterbiPath& path = out.utterances.emplace_back();
    path.log_likelihood = r.log_likelihood[u];
    path.states.assign(r.paths.begin() + r.frame_offset[u], r.paths.begin() + r.frame_offset[u + 1]);
  }
  return out;
}

GraphBatchPosteriors ToPosteriors(PassResult& r) {
  GraphBatchPosteriors out;
  out.device_seconds = r.device_seconds;
  const GraphLayout& layout = r.layout;
  for (size_t u = 0; u < r.frames.size(); ++u) {
    GraphPosteriors& post = out.utterances.emplace_back();
    post.log_likelihood = r.log_likelihood[u];
    if (!r.gamma.empty()) post.gamma = std::move(r.gamma[u]);
    post.arc_counts.resize(layout.arcs(u));
    for (int32_t a = layout.arc_offset[u]; a < layout.arc_offset[u + 1]; ++a) {
      post.arc_counts[layout.out_arc_id[a]] = r.arc_counts[a];
    }
    post.final_counts.assign(r.final_counts.begin() + layout.final_offset[u],
                             r.final_counts.begin() + layout.final_offset[u + 1]);
  }
  return out;
}

// Host entries: their own stream on options.device.
absl::StatusOr<PassResult> RunHost(GraphPass pass, absl::Span<const HmmGraph* const> graphs,
                                   absl::Span<const ConstMatrixView> emissions, const GraphBatchOptions& options) {
  GMM_RETURN_IF_ERROR(SelectDevice(options.device));
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  ScoreInput input;
  input.host = emissions;
  return RunPass(pass, graphs, input, stream.get(), options);
}

absl::StatusOr<PassResult> RunDevice(GraphPass pass, absl::Span<const HmmGraph* const> graphs,
                                     const DeviceScores& scores, cudaStream_t stream,
                                     const GraphBatchOptions& options) {
  GMM_RETURN_IF_ERROR(SelectDevice(options.device));
  ScoreInput input;
  input.device = &scores;
  return RunPass(pass, graphs, input, stream, options);
}

}  // namespace

absl::StatusOr<GraphBatchPosteriors> GraphForwardBackwardCuda(absl::Span<const HmmGraph* const> graphs,
                                                              absl::Span<const ConstMatrixView> emissions,
                                                              const GraphBatchOptions& options) {
  GMM_RETURN_IF_ERROR(ValidateHostBatch(graphs, emissions));
  if (graphs.empty()) return GraphBatchPosteriors();
  GMM_ASSIGN_OR_RETURN(PassResult r, RunHost(GraphPass::kForwardBackward, graphs, emissions, options));
  return ToPosteriors(r);
}

absl::StatusOr<GraphBatchPaths> GraphViterbiCuda(absl::Span<const HmmGraph* const> graphs,
                                                 absl::Span<const ConstMatrixView> emissions, int device) {
  GMM_RETURN_IF_ERROR(ValidateHostBatch(graphs, emissions));
  if (graphs.empty()) return GraphBatchPaths();
  GraphBatchOptions options;
  options.device = device;
  GMM_ASSIGN_OR_RETURN(PassResult r, RunHost(GraphPass::kViterbi, graphs, emissions, options));
  return ToPaths(r);
}

absl::StatusOr<GraphBatchPosteriors> GraphForwardBackwardOnDevice(absl::Span<const HmmGraph* const> graphs,
                                                                  const DeviceScores& scores, cudaStream_t stream,
                                                                  const GraphBatchOptions& options) {
  GMM_RETURN_IF_ERROR(ValidateDeviceBatch(graphs, scores));
  if (graphs.empty()) return GraphBatchPosteriors();
  GMM_ASSIGN_OR_RETURN(PassResult r, RunDevice(GraphPass::kForwardBackward, graphs, scores, stream, options));
  return ToPosteriors(r);
}

absl::StatusOr<GraphBatchPaths> GraphViterbiOnDevice(absl::Span<const HmmGraph* const> graphs,
                                                     const DeviceScores& scores, cudaStream_t stream,
                                                     const GraphBatchOptions& options) {
  GMM_RETURN_IF_ERROR(ValidateDeviceBatch(graphs, scores));
  if (graphs.empty()) return GraphBatchPaths();
  GMM_ASSIGN_OR_RETURN(PassResult r, RunDevice(GraphPass::kViterbi, graphs, scores, stream, options));
  return ToPaths(r);
}

}  // namespace gmmscore
