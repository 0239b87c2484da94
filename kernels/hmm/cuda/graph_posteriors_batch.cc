#include "kernels/hmm/cuda/graph_posteriors_batch.h"

#include "kernels/hmm/cuda/graph_hmm_cuda.h"

namespace gmmscore {

GraphPosteriorsBatch CudaGraphPosteriors(int device) {
  return [device](absl::Span<const HmmGraph* const> graphs, absl::Span<const ConstMatrixView> emissions) {
    const GraphBatchOptions options{.device = device, .want_gamma = true};
    std::vector<absl::StatusOr<GraphPosteriors>> out;
    absl::StatusOr<GraphBatchPosteriors> batch = GraphForwardBackwardCuda(graphs, emissions, options);
    if (batch.ok()) {
      for (GraphPosteriors& p : batch->utterances) out.push_back(std::move(p));
      return out;
    }
    const bool one_utterance = batch.status().code() == absl::StatusCode::kFailedPrecondition ||
                               batch.status().code() == absl::StatusCode::kInvalidArgument;
    for (size_t u = 0; u < graphs.size(); ++u) {
      if (!one_utterance) {
        out.push_back(batch.status());
        continue;
      }
      absl::StatusOr<GraphBatchPosteriors> single = GraphForwardBackwardCuda({graphs[u]}, {emissions[u]}, options);
      if (single.ok()) out.push_back(std::move(single->utterances[0]));
      else out.push_back(single.status());
    }
    return out;
  };
}

}  // namespace gmmscore
