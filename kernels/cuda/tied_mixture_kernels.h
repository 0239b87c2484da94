// Launchers of the tied-mixture kernels (tied_mixture_kernels.cu), callable
// from host C++: steps (a), (b), (d) of TiedMixtureDevice::Launch and the
// mix of codebooks with few states. Everything is enqueued on `stream`;
// pointers are device memory; every launch is checked into the Status.
//
// Layouts (row-major unless said otherwise; F = frames of the slice,
// N = the stream's Gaussians over all codebooks, C = codebooks,
// S = states, numbered "grouped": codebook by codebook, see
// tied_mixture_device.h):
//   densities, exps  F x N      maxes  F x C      mix  F x S (grouped)
//   weights          per codebook c at weight_offset[c]: column-major
//                    S_c x G_c linear weights (the SGEMM's A)
//   log_weights      per codebook c at weight_offset[c]: row-major
//                    S_c x G_c log weights (the exact recomputation)
#ifndef GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_KERNELS_H_
#define GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"

namespace gmmscore {

// The codebook tables of one stream, device pointers.
struct TiedStreamTables {
  const int64_t* codebook_begin = nullptr;  // C + 1: Gaussian rows of each codebook
  const int64_t* weight_offset = nullptr;   // C: where codebook c's weights start
  const float* weights = nullptr;           // linear, column-major per codebook
  const float* log_weights = nullptr;       // log, row-major per codebook
};

// The state grouping, shared by all streams, device pointers.
struct TiedStateTables {
  const int32_t* state_begin = nullptr;       // C + 1: grouped states of each codebook
  const int32_t* grouped_codebook = nullptr;  // S: codebook of grouped state i
  const int32_t* grouped_state = nullptr;     // S: model state of grouped state i
};

// expanded (F x (1 + 2 dim)) = [1, y, y^2], y = features[t][0 .. dim) - center,
// frames row_stride apart (features already offset to the stream).
absl::Status LaunchTiedExpand(const float* features, int64_t row_stride, const float* center,
                              int64_t num_frames, int dim, float* expanded, cudaStream_t stream);

// (b): per frame and codebook, maxes = the codebook's best density and
// exps = exp(density - max) for its Gaussians.
absl::Status LaunchCodebookMaxExp(const float* densities, const int64_t* codebook_begin,
                                  int num_codebooks, int64_t num_gaussians, int64_t num_frames,
                                  float* exps, float* maxes, cudaStream_t stream);

// (c) for the grouped states listed in `states` (codebooks with too few
// states for an SGEMM of their own): mix[t][i] = sum_g w[i][g] exps[t][g].
absl::Status LaunchSmallCodebookMix(const TiedStreamTables& stream_tables, const TiedStateTables& states_tables,
                                    const int32_t* states, int num_listed, const float* exps,
                                    int64_t num_gaussians, int num_states, int64_t num_frames, float* mix,
                                    cudaStream_t stream);

// (d): ll = log(mix) + max, or the exact log-domain sum over the state's
// Gaussians where mix <= kSmallestTrustedMix; loglikes[t][state] (T x S,
// model order) = (accumulate ? loglikes[t][state] : 0) + stream_weight * ll.
absl::Status LaunchTiedStreamAccumulate(const TiedStreamTables& stream_tables, const TiedStateTables& states_tables,
                                        const float* mix, const float* maxes, const float* densities,
                                        int num_codebooks, int64_t num_gaussians, int num_states,
                                        int64_t num_frames, float stream_weight, bool accumulate, float* loglikes,
                                        cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_KERNELS_H_
