// What the 3xFP16 wgmma kernel reads of a model and a window
// (half_tc_layout.h), and how its launcher fills it for one launch.
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_HALF_TENSOR_CORE_ARGS_H_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_HALF_TENSOR_CORE_ARGS_H_

#include <cstdint>

#include "kernels/cuda/device_model.h"

namespace gmmscore {

struct HalfTensorCoreArgs {
  const uint16_t* big;            // (rows + 64) x cols binary16, see HalfTensorCoreLayout
  const uint16_t* small;
  const float* gconst;            // rows + 64
  const float* frame_scale;       // cols
  const int32_t* row_group_state;
  const int32_t* range_begin;     // in row groups; num_ranges + 1
  int num_ranges;
  const float* center;
  const float* features;          // num_frames x dim
  int64_t num_frames;
  int dim;
  int cols;
  int num_states;
  float* loglikes;                // num_frames x num_states
};

// Frames [first, first + frames) of a window scored by `model`.
inline HalfTensorCoreArgs MakeHalfTensorCoreArgs(const DeviceModel& model, const float* features,
                                                 int64_t first, int64_t frames, float* loglikes) {
  HalfTensorCoreArgs args{};
  args.big = model.tc16_big.data();
  args.small = model.tc16_small.data();
  args.gconst = model.tc16_gconst.data();
  args.frame_scale = model.tc16_frame_scale.data();
  args.row_group_state = model.tc_row_group_state.data();
  args.range_begin = model.tc_range_begin.data();
  args.num_ranges = model.tc_ranges;
  args.center = model.center.data();
  args.features = features + first * model.dim;
  args.num_frames = frames;
  args.dim = model.dim;
  args.cols = model.tc16_cols;
  args.num_states = model.num_states;
  args.loglikes = loglikes + first * model.num_states;
  return args;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_HALF_TENSOR_CORE_ARGS_H_
