#include "kernels/cuda/device_model.h"

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "kernels/cuda/fused_layout.h"
#include "kernels/cuda/loglik_policy.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/half_tc_layout.h"
#include "kernels/cuda/tc_layout.h"
#include "kernels/cuda/wgmma_loglik_launch.h"

namespace gmmscore {

int64_t DeviceModel::bytes() const {
  return static_cast<int64_t>(ab.bytes() + fused_gconsts.bytes() + block_gaussians.bytes() +
                              block_ab_offset.bytes() + block_gconst_offset.bytes() +
                              slot_state.bytes() + tc_big.bytes() + tc_small.bytes() + tc_row_group_state.bytes() +
                              tc16_big.bytes() + tc16_small.bytes() + tc16_gconst.bytes() +
                              tc16_frame_scale.bytes() +
                              tc_range_begin.bytes() + params.bytes() + state_offsets.bytes() +
                              center.bytes());
}

absl::StatusOr<DeviceModel> DeviceModel::Upload(const DiagGmmModel& model) {
  const FusedLayout layout = BuildFusedLayout(model, kFusedStatesPerBlock);
  const TensorCoreLayout tc = BuildTensorCoreLayout(model);
  GMM_ASSIGN_OR_RETURN(const DeviceInfo info, CurrentDeviceInfo());
  const bool wants_halves = info.has_wgmma() && model.dim() <= kWgmmaMaxDim;
  const HalfTensorCoreLayout halves = wants_halves ? BuildHalfTensorCoreLayout(model, tc) : HalfTensorCoreLayout{};
  const ConstMatrixView params = model.params();
  const int64_t needed =
      static_cast<int64_t>(layout.ab.size() * sizeof(Float4) + layout.gconsts.size() * sizeof(float) +
                           2 * tc.big.size() * sizeof(float) + params.rows * params.cols * sizeof(float) +
                           2 * halves.big.size() * sizeof(uint16_t) + halves.gconst.size() * sizeof(float));
  size_t free_bytes = 0, total_bytes = 0;
  GMM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes), "query device memory");
  if (needed > static_cast<int64_t>(free_bytes)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "model needs %d MiB on the device, %d MiB of %d MiB are free", needed >> 20,
        free_bytes >> 20, total_bytes >> 20));
  }

  DeviceModel out;
  out.dim = model.dim();
  out.dim4 = layout.dim4;
  out.num_states = model.num_states();
  out.num_fused_blocks = layout.num_blocks;
  out.num_gaussians = model.num_gaussians();
  out.padded_gaussians = layout.padded_gaussians();
  out.max_block_gaussians = model.max_gaussians_per_state();
  static_assert(sizeof(Float4) == sizeof(float4));
  GMM_ASSIGN_OR_RETURN(out.ab, DeviceBuffer<float4>::FromHost(
                                   reinterpret_cast<const float4*>(layout.ab.data()), layout.ab.size()));
  GMM_ASSIGN_OR_RETURN(out.fused_gconsts,
                       DeviceBuffer<float>::FromHost(layout.gconsts.data(), layout.gconsts.size()));
  GMM_ASSIGN_OR_RETURN(out.block_gaussians, DeviceBuffer<int32_t>::FromHost(
                                                layout.block_gaussians.data(), layout.block_gaussians.size()));
  GMM_ASSIGN_OR_RETURN(out.block_ab_offset, DeviceBuffer<int64_t>::FromHost(
                                                layout.block_ab_offset.data(), layout.block_ab_offset.size()));
  GMM_ASSIGN_OR_RETURN(out.block_gconst_offset,
                       DeviceBuffer<int64_t>::FromHost(layout.block_gconst_offset.data(),
                                                       layout.block_gconst_offset.size()));
  GMM_ASSIGN_OR_RETURN(out.slot_state,
                       DeviceBuffer<int32_t>::FromHost(layout.slot_state.data(), layout.slot_state.size()));
  out.tc_cols = tc.cols;
  out.tc_ranges = tc.num_ranges();
  GMM_ASSIGN_OR_RETURN(out.tc_big, DeviceBuffer<float>::FromHost(tc.big.data(), tc.big.size()));
  GMM_ASSIGN_OR_RETURN(out.tc_small, DeviceBuffer<float>::FromHost(tc.small.data(), tc.small.size()));
  GMM_ASSIGN_OR_RETURN(out.tc_row_group_state, DeviceBuffer<int32_t>::FromHost(tc.row_group_state.data(),
                                                                                tc.row_group_state.size()));
  GMM_ASSIGN_OR_RETURN(out.tc_range_begin,
                       DeviceBuffer<int32_t>::FromHost(tc.range_begin.data(), tc.range_begin.size()));
  if (wants_halves) {
    out.tc16_cols = halves.cols;
    GMM_ASSIGN_OR_RETURN(out.tc16_big, DeviceBuffer<uint16_t>::FromHost(halves.big.data(), halves.big.size()));
    GMM_ASSIGN_OR_RETURN(out.tc16_small,
                         DeviceBuffer<uint16_t>::FromHost(halves.small.data(), halves.small.size()));
    GMM_ASSIGN_OR_RETURN(out.tc16_gconst,
                         DeviceBuffer<float>::FromHost(halves.gconst.data(), halves.gconst.size()));
    GMM_ASSIGN_OR_RETURN(out.tc16_frame_scale,
                         DeviceBuffer<float>::FromHost(halves.frame_scale.data(), halves.frame_scale.size()));
  }
  GMM_ASSIGN_OR_RETURN(out.params,
                       DeviceBuffer<float>::FromHost(params.data, params.rows * params.cols));
  GMM_ASSIGN_OR_RETURN(out.state_offsets, DeviceBuffer<int64_t>::FromHost(
                                              model.state_offsets().data(), model.state_offsets().size()));
  GMM_ASSIGN_OR_RETURN(out.center,
                       DeviceBuffer<float>::FromHost(model.center().data(), model.center().size()));
  return out;
}

}  // namespace gmmscore
