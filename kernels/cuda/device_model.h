// A model resident on one CUDA device, in both layouts the kernels read:
// the fused kernel's blocked float4 layout and the plain Gtot x (1 + 2D)
// parameter matrix that the cuBLAS two-kernel path multiplies.
//
//   GMM_ASSIGN_OR_RETURN(DeviceModel resident, DeviceModel::Upload(model));
#ifndef GMMSCORE_KERNELS_CUDA_DEVICE_MODEL_H_
#define GMMSCORE_KERNELS_CUDA_DEVICE_MODEL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

struct DeviceModel {
  int dim = 0;
  int dim4 = 0;
  int num_states = 0;
  int num_fused_blocks = 0;
  int64_t num_gaussians = 0;
  int64_t padded_gaussians = 0;  // fused kernel's Gaussian evaluations per frame
  int max_block_gaussians = 0;   // largest Gaussian count of a fused block
  // Fused layout (see fused_layout.h).
  DeviceBuffer<float4> ab;
  DeviceBuffer<float> fused_gconsts;
  DeviceBuffer<int32_t> block_gaussians;
  DeviceBuffer<int64_t> block_ab_offset;
  DeviceBuffer<int64_t> block_gconst_offset;
  DeviceBuffer<int32_t> slot_state;
  // Tensor-core layout (see tc_layout.h).
  int tc_cols = 0;
  int tc_ranges = 0;
  DeviceBuffer<float> tc_big;    // TF32 split of the GEMM form
  DeviceBuffer<float> tc_small;
  DeviceBuffer<int32_t> tc_row_group_state;
  DeviceBuffer<int32_t> tc_range_begin;
  // Binary16 layout of the same rows (half_tc_layout.h), for the 3xFP16
  // wgmma kernel: made on compute capability 9.0 devices only (tc16_cols 0
  // elsewhere), where that kernel runs.
  int tc16_cols = 0;
  DeviceBuffer<uint16_t> tc16_big;
  DeviceBuffer<uint16_t> tc16_small;
  DeviceBuffer<float> tc16_gconst;
  DeviceBuffer<float> tc16_frame_scale;
  // Two-kernel path.
  DeviceBuffer<float> params;          // Gtot x (1 + 2D), row-major
  DeviceBuffer<int64_t> state_offsets; // S + 1
  DeviceBuffer<float> center;          // D

  int64_t bytes() const;

  // Lays the model out and copies it to the current device. Fails with
  // RESOURCE_EXHAUSTED, without allocating, when the device lacks the room.
  static absl::StatusOr<DeviceModel> Upload(const DiagGmmModel& model);
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_DEVICE_MODEL_H_
