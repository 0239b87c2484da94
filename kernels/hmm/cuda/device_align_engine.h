// The aligner's engine on one CUDA device: a batch's senones scored on the
// GPU (TiedMixtureDevice) into one device matrix and Viterbi run over it in
// place (graph_hmm_cuda.h), so scores never cross PCIe; only features go up
// and paths come back.
//
//   SphinxAlignerOptions options;
//   options.engine = CudaAlignEngineFactory(/*device=*/0);
//   GMM_ASSIGN_OR_RETURN(auto aligner, SphinxAligner::Create(model_dir, dict, nullptr, options));
//
// Per batch: the union of the graphs' senones (only those are scored, with
// only their codebooks: TiedMixtureModel::SubsetStates) is uploaded, the
// utterances' frames are copied into one matrix, scored, and Viterbi reads
// each graph's columns of it. Batches larger than the memory budget
// (align_engine_budget below) run in chunks of utterances.
//
// Errors, per utterance as align_engine.h says: INVALID_ARGUMENT for
// features of the wrong dimension or not finite (checked on the host first),
// FAILED_PRECONDITION for no path (the batch is retried one utterance at a
// time to find which); device failures (UNAVAILABLE without a device,
// RESOURCE_EXHAUSTED, INTERNAL) fail every utterance of the chunk.
// Thread safety: one BestPaths call at a time per engine.
#ifndef GMMSCORE_KERNELS_HMM_CUDA_DEVICE_ALIGN_ENGINE_H_
#define GMMSCORE_KERNELS_HMM_CUDA_DEVICE_ALIGN_ENGINE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/hmm/align_engine.h"

namespace gmmscore {

// Device bytes a chunk's score matrix may take (frames x senones x 4):
// 4 GiB holds 35 minutes of en-us speech (5126 senones) even if a chunk
// used every senone, so an hour-long batch runs in two chunks.
inline constexpr int64_t kAlignScoreBudgetBytes = int64_t{4} << 30;

// `score_budget_bytes` bounds a chunk's score matrix (tests make it small
// to force chunks).
absl::StatusOr<std::unique_ptr<AlignEngine>> MakeCudaAlignEngine(std::shared_ptr<const TiedMixtureModel> model,
                                                                 int device,
                                                                 int64_t score_budget_bytes = kAlignScoreBudgetBytes);

inline AlignEngineFactory CudaAlignEngineFactory(int device) {
  return [device](std::shared_ptr<const TiedMixtureModel> model) { return MakeCudaAlignEngine(std::move(model), device); };
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_CUDA_DEVICE_ALIGN_ENGINE_H_
