// Model fusion on the device (ScoringBackend::ScoreFusedBatch on CUDA): the
// per-state half of ModelFusion (fusion.h) for many chunks in one launch,
// so that 10 speaker-cluster models send back one fused T x S matrix per
// chunk instead of ten. The per-frame log weights come from the host
// (ModelFusion::NextLogWeights, which keeps the float64 posterior window).
//
// For every segment (one fused chunk), frame t < rows and state s < states,
// with L_m = the m-th model's scores (models[models_offset + m], T x S rows)
// and lw = log_weights + weights_offset + t * num_models:
//   weighted   fused[t][s] = log sum_m exp(lw[m] + L_m[t][s])   (float32)
//   otherwise  fused[t][s] = max_m L_m[t][s]
//   winners[row]   = the model whose term is largest at the frame's best
//                    fused state (lowest state, then lowest model, on ties)
//   totals[row]    = log sum_s exp(fused[t][s])   (when totals_offset >= 0)
// where row = first_row + t.
#ifndef GMMSCORE_KERNELS_CUDA_FUSION_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_FUSION_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gmmscore {

// Most models one device fusion takes (their log weights and row pointers
// are staged in shared memory); wider fusions are fused on the host.
inline constexpr int kMaxDeviceFusionModels = 64;

// One fused chunk. Offsets count elements from the launch's buffers.
struct FusionSegment {
  int64_t first_row = 0;       // its first frame among all rows of the launch
  int64_t out_offset = 0;      // its fused rows in `fused` (rows x states floats)
  int64_t weights_offset = 0;  // its log weights in `log_weights` (rows x num_models)
  int64_t totals_offset = -1;  // its fused frame totals in `totals`; -1: none
  int32_t rows = 0;
  int32_t states = 0;
  int32_t num_models = 0;      // 1 .. kMaxDeviceFusionModels
  int32_t models_offset = 0;   // its models' score pointers in `models`
  int32_t weighted = 0;        // 1: log-sum-exp with lw, 0: max
  int32_t padding = 0;
};

// Segments must be ordered by first_row, cover rows [0, total_rows) without
// gaps, and every pointer be device memory. One block per row.
absl::Status LaunchFusion(const FusionSegment* segments, int num_segments, int64_t total_rows,
                          const float* const* models, const float* log_weights, float* fused,
                          float* totals, int* winners, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FUSION_LAUNCH_H_
