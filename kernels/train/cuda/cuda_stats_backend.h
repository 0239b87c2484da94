// The CUDA StatsBackend: frames held in device memory (a FrameBlock per
// LoadFrames), the model in the kernels' tile layout, and per Accumulate
// the two-kernel statistics pass over the pairs grouped by target
// (stats_plan.h): float32 FFMAs (stats_kernels.cuh; the first kernel keeps
// its scores for the second within a memory budget, whose statistics GEMM
// runs on sm_90's float64 tensor cores where they serve,
// stats_dmma_kernel.cuh) or 3xTF32 tensor cores (stats_tc_kernels.cuh), as
// CudaStatsOptions::kernel and kept_gemm and the policy choose.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<StatsBackend> cuda, CreateCudaStatsBackend(/*device=*/0));
//   GMM_RETURN_IF_ERROR(cuda->SetModel(model));
//   GMM_ASSIGN_OR_RETURN(auto block, cuda->LoadFrames(features.view()));
//   GMM_RETURN_IF_ERROR(cuda->Accumulate(*block, pairs, &stats));
//
// Results: per pair the log-sum-exp and posteriors in float32 from the
// centred scoring form (scored in float64 on the float64 tensor-core path),
// each 64-pair tile's moments (of raw features) in float32 (float64, from
// exact products, on that path), everything beyond in float64, added in an
// order fixed by the request and the device (the same bits every run on one
// device; the chunks, and so the order, depend on the device's memory size
// through the kept-score budget). Pairs are processed in device chunks of at most
// options.max_chunk_pairs (fewer where the chunk's kept scores must fit
// options.max_score_bytes), so device scratch stays bounded whatever the
// request's size; statistics are added to *stats only once the whole
// request succeeded.
//
// Errors: as StatsBackend; also INVALID_ARGUMENT from SetModel for
// dimensions above kMaxStatsDim (128) and from Accumulate for a block loaded
// by another backend; UNAVAILABLE when no CUDA device answers;
// RESOURCE_EXHAUSTED when device memory runs out.
//
// Thread safety: one thread at a time (StatsBackend); the backend sets its
// device on the calling thread at each call.
#ifndef GMMSCORE_KERNELS_TRAIN_CUDA_CUDA_STATS_BACKEND_H_
#define GMMSCORE_KERNELS_TRAIN_CUDA_CUDA_STATS_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/train/cuda/stats_policy.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

struct CudaStatsOptions {
  // Pairs on the device at once (frame index, weight and log-sum-exp: 16
  // bytes each). At most 2^30.
  int64_t max_chunk_pairs = train_cuda::kDefaultMaxChunkPairs;
  // Bytes of float64 partial sums per statistics launch (a launch of more
  // work items is split).
  int64_t max_partial_bytes = train_cuda::kDefaultMaxPartialBytes;
  // Bytes of kept scores (stats_policy.h) per chunk: the chunk of pairs
  // shrinks so that its scores fit. -1: 1/kAutoScoreShare of the device's
  // memory, at most kMaxAutoScoreBytes. 0, or too little for
  // kMinKeptChunkPairs pairs of the model's largest state: the statistics
  // kernel scores again instead (the tensor-core kernels always do).
  int64_t max_score_bytes = -1;
  // Tests: fill every device scratch buffer with NaN before it is used, so
  // an element a kernel fails to write shows in the statistics.
  bool poison_scratch = false;
  // Tests and benchmarks: the statistics kernel's accumulation variant
  // (stats_policy.h: 0 or kStatsFlushTilesAlt); -1 = kStatsFlushTiles.
  int flush_tiles = -1;
  // Which kernels (stats_policy.h): kAuto = ChooseStatsKernel for the model
  // and device; kTf32x3 on a model or device the tensor-core kernels do not
  // serve makes SetModel fail (INVALID_ARGUMENT / FAILED_PRECONDITION).
  train_cuda::StatsKernelChoice kernel = train_cuda::StatsKernelChoice::kAuto;
  // The float32 kernels' statistics GEMM over kept scores (stats_policy.h):
  // kAuto = ChooseKeptStatsGemm for the model and device (and float32 where
  // the build has no sm_90 code); kFp64Mma on a model, device or build it
  // does not serve makes SetModel fail (INVALID_ARGUMENT /
  // FAILED_PRECONDITION).
  train_cuda::KeptStatsGemm kept_gemm = train_cuda::KeptStatsGemm::kAuto;
  // Where the float64 GEMM is used, the fewest tiles of a state for whose
  // pairs the log-sum-exp pass uses it too; -1 = kFp64MmaLseMinTiles (tests
  // set 2: every state that keeps scores).
  int lse_min_tiles = -1;
};

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateCudaStatsBackend(int device,
                                                                     const CudaStatsOptions& options);
absl::StatusOr<std::unique_ptr<StatsBackend>> CreateCudaStatsBackend(int device);

// Tests: the chunks of pairs whose scores `backend` kept (stats_policy.h)
// over its life; 0 for a backend not made by CreateCudaStatsBackend.
int64_t KeptScoreChunks(const StatsBackend& backend);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_CUDA_CUDA_STATS_BACKEND_H_
