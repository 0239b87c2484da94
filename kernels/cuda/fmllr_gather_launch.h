// The fMLLR statistics of live streams on the device (fmllr_gather.h), two
// launches per backend call over every window that gathers:
//   1. terms: one block per frame. The frame's state posteriors from its
//      scores (max, the softmax over states within 30 nats, PosteriorPolicy's
//      floor and silence, as PairsFromScores), then for each kept state a
//      warp computes its Gaussians' posteriors from the raw frame in float64
//      and sums the frame's terms [beta, a_i = sum gamma/var_i,
//      b_i = sum gamma mu_i/var_i] (1 + 2D doubles a frame, scratch).
//   2. gram: K += b x~^T and G_i += a_i x~ x~^T (x~ = [x; 1]) over the
//      window's frames, each block a slice of the sums and every frame of
//      one window, added to the target's segment with float64 atomics
//      (windows of one target may run on concurrent lanes).
// The model is read in its plain parameter layout (DeviceModel::params: per
// Gaussian [gconst, mu/var - centred, -1/(2 var)], scoring form on y = x - c),
// so nothing is uploaded for gathering beyond each target's silence mask.
#ifndef GMMSCORE_KERNELS_CUDA_FMLLR_GATHER_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_FMLLR_GATHER_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gmmscore {

// Largest feature dimension and Gaussians per state the kernels take (their
// shared-memory tiles); larger models gather on the host.
inline constexpr int kMaxGatherDim = 64;
inline constexpr int kMaxGatherGaussians = 1024;

// One window to gather from, device pointers.
struct FmllrGatherWindow {
  const float* frames = nullptr;  // rows x dim, raw (as sent)
  const float* scores = nullptr;  // rows x num_states, the window's own
  double* terms = nullptr;        // rows x (1 + 2 dim), scratch
  double* sums = nullptr;         // the target's segment (FmllrGatherValues)
  const float* params = nullptr;  // Gtot x (1 + 2 dim)
  const int64_t* state_offsets = nullptr;
  const float* center = nullptr;   // dim
  const uint8_t* silence = nullptr;  // num_states flags; null: no silence states
  int rows = 0;
  int num_states = 0;
  double silence_threshold = 0.0;  // 0: off
  double min_posterior = 0.0;
};

// Queues both launches for `count` windows (device array) of dimension `dim`
// (<= kMaxGatherDim), whose longest has `max_rows` frames and whose models
// have at most `max_gaussians` (<= kMaxGatherGaussians) Gaussians a state.
absl::Status LaunchFmllrGather(const FmllrGatherWindow* windows, int count, int dim,
                               int max_rows, int max_gaussians, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FMLLR_GATHER_LAUNCH_H_
