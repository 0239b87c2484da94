#include "kernels/hmm/cuda/device_align_engine.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/tied_mixture_device.h"
#include "kernels/hmm/cuda/graph_hmm_cuda.h"

namespace gmmscore {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A chunk's graphs with their columns renumbered into the chunk's union of
// senones (the columns of its score matrix).
struct ChunkGraphs {
  std::vector<int32_t> senones;  // the union, ascending
  std::vector<HmmGraph> graphs;
};

ChunkGraphs Renumber(absl::Span<const HmmGraph* const> graphs, const std::vector<size_t>& members) {
  ChunkGraphs out;
  for (size_t u : members) out.senones.insert(out.senones.end(), graphs[u]->columns.begin(), graphs[u]->columns.end());
  std::sort(out.senones.begin(), out.senones.end());
  out.senones.erase(std::unique(out.senones.begin(), out.senones.end()), out.senones.end());
  for (size_t u : members) {
    HmmGraph g = *graphs[u];
    for (int32_t& c : g.columns) {
      c = static_cast<int32_t>(std::lower_bound(out.senones.begin(), out.senones.end(), c) - out.senones.begin());
    }
    out.graphs.push_back(std::move(g));
  }
  return out;
}

class CudaAlignEngine : public AlignEngine {
 public:
  CudaAlignEngine(std::shared_ptr<const TiedMixtureModel> model, int device, int64_t budget, CudaStream stream,
                  CublasHandle cublas, CudaEvent start, CudaEvent scored)
      : model_(std::move(model)), device_(device), budget_(budget), stream_(std::move(stream)), cublas_(std::move(cublas)),
        start_(std::move(start)), scored_(std::move(scored)) {
    workspace_.cublas = cublas_.get();
  }

  std::string name() const override { return absl::StrCat("cuda:", device_); }

  std::vector<absl::StatusOr<ViterbiPath>> BestPaths(absl::Span<const HmmGraph* const> graphs,
                                                     absl::Span<const ConstMatrixView> features,
                                                     AlignTiming* timing) override {
    std::vector<absl::StatusOr<ViterbiPath>> out(graphs.size(), absl::InternalError("not aligned"));
    // Chunks of valid utterances whose score matrix fits the budget even if
    // they used every senone.
    const int64_t max_frames = std::max<int64_t>(1, budget_ / (4 * int64_t{model_->num_states()}));
    std::vector<size_t> chunk;
    int64_t chunk_frames = 0;
    for (size_t u = 0; u < graphs.size(); ++u) {
      const absl::Status valid = ValidateFeatures(*model_, features[u]);
      if (!valid.ok()) {
        out[u] = valid;
        continue;
      }
      if (!chunk.empty() && chunk_frames + features[u].rows > max_frames) {
        RunChunk(graphs, features, chunk, timing, out);
        chunk.clear();
        chunk_frames = 0;
      }
      chunk.push_back(u);
      chunk_frames += features[u].rows;
    }
    if (!chunk.empty()) RunChunk(graphs, features, chunk, timing, out);
    return out;
  }

 private:
  void RunChunk(absl::Span<const HmmGraph* const> graphs, absl::Span<const ConstMatrixView> features,
                const std::vector<size_t>& members, AlignTiming* timing,
                std::vector<absl::StatusOr<ViterbiPath>>& out) {
    absl::StatusOr<std::vector<absl::StatusOr<ViterbiPath>>> paths = ScoreAndDecode(graphs, features, members, timing);
    for (size_t k = 0; k < members.size(); ++k) {
      out[members[k]] = paths.ok() ? std::move((*paths)[k]) : absl::StatusOr<ViterbiPath>(paths.status());
    }
  }

  // Scores the chunk's frames for the union of its senones, then Viterbi in
  // place; per-utterance results, or the device's failure.
  absl::StatusOr<std::vector<absl::StatusOr<ViterbiPath>>> ScoreAndDecode(
      absl::Span<const HmmGraph* const> graphs, absl::Span<const ConstMatrixView> features,
      const std::vector<size_t>& members, AlignTiming* timing) {
    auto start = std::chrono::steady_clock::now();
    GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "select the alignment device");
    const ChunkGraphs chunk = Renumber(graphs, members);
    GMM_ASSIGN_OR_RETURN(const TiedMixtureModel subset, model_->SubsetStates(chunk.senones));
    GMM_ASSIGN_OR_RETURN(const TiedMixtureDevice resident, TiedMixtureDevice::Upload(subset));
    DeviceScores scores;
    const int64_t dim = model_->dim();
    for (size_t u : members) {
      scores.first_row.push_back(scores.rows);
      scores.frames.push_back(features[u].rows);
      scores.rows += features[u].rows;
    }
    packed_.resize(scores.rows * dim);
    for (size_t k = 0; k < members.size(); ++k) {
      const ConstMatrixView f = features[members[k]];
      for (int64_t t = 0; t < f.rows; ++t) std::copy(f.row(t), f.row(t) + dim, &packed_[(scores.first_row[k] + t) * dim]);
    }
    scores.model_states = scores.row_stride = static_cast<int64_t>(chunk.senones.size());
    GMM_RETURN_IF_ERROR(EnsureCapacity(d_features_, packed_.size()));
    GMM_RETURN_IF_ERROR(EnsureCapacity(d_scores_, static_cast<size_t>(scores.rows * scores.row_stride)));
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_features_.data(), packed_.data(), packed_.size() * sizeof(float),
                                             cudaMemcpyHostToDevice, stream_.get()),
                             "upload the chunk's features");
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_.get(), stream_.get()), "record an event");
    GMM_RETURN_IF_ERROR(resident.Launch(d_features_.data(), scores.rows, d_scores_.data(), workspace_, stream_.get()));
    GMM_CUDA_RETURN_IF_ERROR(cudaEventRecord(scored_.get(), stream_.get()), "record an event");
    GMM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(scored_.get()), "score the chunk");
    float ms = 0;
    GMM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_.get(), scored_.get()), "time the scoring");
    timing->device_scoring += ms / 1e3;
    timing->scoring += SecondsSince(start);
    scores.data = d_scores_.data();

    start = std::chrono::steady_clock::now();
    std::vector<const HmmGraph*> ptrs;
    for (const HmmGraph& g : chunk.graphs) ptrs.push_back(&g);
    std::vector<absl::StatusOr<ViterbiPath>> out;
    absl::StatusOr<GraphBatchPaths> best = GraphViterbiOnDevice(ptrs, scores, stream_.get(), {.device = device_});
    if (best.ok()) {
      timing->device_viterbi += best->device_seconds;
      for (ViterbiPath& p : best->utterances) out.push_back(std::move(p));
    } else if (best.status().code() == absl::StatusCode::kFailedPrecondition ||
               best.status().code() == absl::StatusCode::kInvalidArgument) {
      // One utterance has no path (or bad scores): find which, one at a time.
      for (size_t k = 0; k < ptrs.size(); ++k) {
        DeviceScores one = scores;
        one.first_row = {scores.first_row[k]};
        one.frames = {scores.frames[k]};
        absl::StatusOr<GraphBatchPaths> single = GraphViterbiOnDevice({ptrs[k]}, one, stream_.get(), {.device = device_});
        if (single.ok()) out.push_back(std::move(single->utterances[0]));
        else out.push_back(single.status());
      }
    } else {
      return best.status();
    }
    timing->viterbi += SecondsSince(start);
    return out;
  }

  std::shared_ptr<const TiedMixtureModel> model_;
  int device_;
  int64_t budget_;
  CudaStream stream_;
  CublasHandle cublas_;
  CudaEvent start_, scored_;
  TiedMixtureWorkspace workspace_;
  DeviceBuffer<float> d_features_, d_scores_;
  std::vector<float> packed_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AlignEngine>> MakeCudaAlignEngine(std::shared_ptr<const TiedMixtureModel> model,
                                                                 int device, int64_t score_budget_bytes) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device, " (", count, " present)"));
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "select the alignment device");
  GMM_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  GMM_ASSIGN_OR_RETURN(CublasHandle cublas, CublasHandle::Create());
  GMM_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas.get(), CUBLAS_DEFAULT_MATH), "set the cuBLAS math mode");
  GMM_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  GMM_ASSIGN_OR_RETURN(CudaEvent scored, CudaEvent::Create());
  return std::unique_ptr<AlignEngine>(new CudaAlignEngine(std::move(model), device, score_budget_bytes, std::move(stream),
                                                          std::move(cublas), std::move(start), std::move(scored)));
}

}  // namespace gmmscore
