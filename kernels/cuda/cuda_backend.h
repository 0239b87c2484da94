// The CUDA scoring backend: models resident on one device (untied and tied
// mixtures), scored by the kernel each run's precision and length choose
// (loglik_policy.h: split8, fused8x2, fused8x4, the wgmma_f16 tensor-core
// kernel for "fast" models, or the one the caller names: fused8/16/32,
// tf32x3, wgmma, wgmma_f16, gemm),
// with speaker transforms, top_k selection and model fusion on the device.
// Its rooms: batch_plan.h (the host-side plan of a call), lane_pool.h
// (leased lanes), lane_scoring.h (what runs on a lane), cuda_models.h.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ScoringBackend> gpu, CreateCudaBackend(0));
//
// Concurrency: each Score call takes one of a few execution lanes (a CUDA
// stream with its own pinned staging buffers, device scratch and cuBLAS
// handle), so up to kLanes calls run at once and their copies in, kernels and
// copies out overlap; further callers wait for a free lane.
#ifndef GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_
#define GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_info.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// CudaDeviceCount() (device_info.h) says whether any device answers.

struct CudaBackendOptions {
  // Page-locked host memory for dense scores, float32 and halves encoded
  // on the device (pinned_block_pool.h), in
  // blocks of 8 MiB made as they are needed (or all in Init:
  // pinned_scores_at_start): the copy from the GPU lands
  // in blocks the results keep until answered, and no host copy follows.
  // Past this bound (and below one block) scores are copied into each
  // result as before. At 3500 streams of a 5000-state model on an H100
  // host, answers waited about 50 ms to be sent: some 400 MB of scores.
  int64_t pinned_scores_bytes = int64_t{1} << 30;
  // Make every block of pinned_scores_bytes in Init rather than as calls
  // need them. For a server: a block made under load takes milliseconds of
  // cudaHostAlloc on a lane; a two-GPU daemon's lanes stalled at its start
  // while the pools grew, and its first seconds of streams were refused.
  bool pinned_scores_at_start = false;
};

// UNAVAILABLE when `device` does not exist or no driver answers.
absl::StatusOr<std::unique_ptr<ScoringBackend>> CreateCudaBackend(int device,
                                                                  const CudaBackendOptions& options = {});

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_CUDA_BACKEND_H_
