// A TiedMixtureModel resident on one CUDA device, and its scoring: the
// method of TiedMixtureCpuScorer (tied_mixture_scorer.h) on the device, so
// each codebook Gaussian is evaluated once per frame, not once per state that
// uses it. Per slice of frames and per stream f:
//   (a) densities (F x N_f) = [1, y, y^2] params(f)^T: one cuBLAS SGEMM over
//       every codebook's Gaussians (y = x_f - centre_f; the expansion kernel
//       of the two-kernel path, gemm_loglik_kernels.cuh, reading the
//       stream's slice of each frame);
//   (b) per codebook and frame, m = the codebook's best density and
//       p = exp(density - m), in (0, 1];
//   (c) per codebook c, mix (S_c x F) = W_c (S_c x G, linear weights) * p:
//       one SGEMM for each codebook with at least kSgemmMinStates states, one
//       warp-per-(state, frame) kernel for all the others (continuous
//       multi-stream models: one state per codebook);
//   (d) ll_f = log(mix) + m, or where mix <= kTiedSmallestTrustedMix the
//       exact float64 log-domain sum over the state's Gaussians (as the CPU
//       scorer); loglikes (T x S) += stream_weight(f) * ll_f.
// States are "grouped": renumbered codebook by codebook, so that the states
// of codebook c are the contiguous rows [state_begin[c], state_begin[c+1])
// of the mix; (d) writes each back to its model index.
//
//   GMM_ASSIGN_OR_RETURN(TiedMixtureDevice resident, TiedMixtureDevice::Upload(model));
//   GMM_RETURN_IF_ERROR(resident.Launch(d_features, frames, d_loglikes, workspace, stream));
//
// Accuracy: float32 densities as the CPU scorer; tests hold it to the same
// bound against the float64 reference (tied_mixture_reference.h).
#ifndef GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_DEVICE_H_
#define GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_DEVICE_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

// Scratch of TiedMixtureDevice::Launch, grown on demand; one per CUDA stream.
struct TiedMixtureWorkspace {
  cublasHandle_t cublas = nullptr;  // bound to the launch stream by Launch
  DeviceBuffer<float> expanded;     // F x (1 + 2 d_f)
  DeviceBuffer<float> densities;    // F x N_f
  DeviceBuffer<float> exps;         // F x N_f
  DeviceBuffer<float> maxes;        // F x C
  DeviceBuffer<float> mix;          // F x S, grouped states
};

class TiedMixtureDevice {
 public:
  // Codebooks with fewer states are mixed by the small-codebook kernel.
  static constexpr int kSgemmMinStates = 16;

  TiedMixtureDevice() = default;
  TiedMixtureDevice(TiedMixtureDevice&&) = default;
  TiedMixtureDevice& operator=(TiedMixtureDevice&&) = default;

  // Lays the model out and copies it to the current device.
  // RESOURCE_EXHAUSTED, without allocating, when the device lacks the room.
  static absl::StatusOr<TiedMixtureDevice> Upload(const TiedMixtureModel& model);

  int dim() const { return dim_; }
  int num_states() const { return num_states_; }
  // Device bytes of the resident model (not the workspace).
  int64_t bytes() const;

  // Scores `num_frames` frames (device, row-major num_frames x dim()) into
  // `loglikes` (device, num_frames x num_states()), all on `stream`, without
  // synchronising. `workspace.cublas` must be set.
  absl::Status Launch(const float* features, int64_t num_frames, float* loglikes,
                      TiedMixtureWorkspace& workspace, cudaStream_t stream) const;

 private:
  struct Stream {
    int offset = 0;
    int dim = 0;
    float weight = 1.0f;
    int64_t num_gaussians = 0;
    std::vector<int64_t> codebook_begin;  // host copy, C + 1
    std::vector<int64_t> weight_offset;   // host copy, C
    DeviceBuffer<float> params;           // N_f x (1 + 2 d_f)
    DeviceBuffer<float> center;           // d_f
    DeviceBuffer<int64_t> d_codebook_begin;
    DeviceBuffer<int64_t> d_weight_offset;
    DeviceBuffer<float> weights;      // linear, column-major S_c x G per codebook
    DeviceBuffer<float> log_weights;  // log, row-major S_c x G per codebook
  };

  int dim_ = 0;
  int num_states_ = 0;
  int num_codebooks_ = 0;
  int64_t max_stream_gaussians_ = 0;
  int max_cols_ = 0;
  std::vector<int32_t> state_begin_;  // host copy, C + 1
  std::vector<Stream> streams_;
  DeviceBuffer<int32_t> d_state_begin_;
  DeviceBuffer<int32_t> grouped_codebook_;  // S
  DeviceBuffer<int32_t> grouped_state_;     // S
  DeviceBuffer<int32_t> small_states_;      // grouped states of codebooks below kSgemmMinStates
  int num_small_states_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_TIED_MIXTURE_DEVICE_H_
