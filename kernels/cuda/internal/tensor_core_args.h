// What the two tensor-core kernels (mma.sync tf32x3 and wgmma) read of a
// model and a window, and how both launchers fill it for one launch.
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_TENSOR_CORE_ARGS_H_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_TENSOR_CORE_ARGS_H_

#include <cstdint>

#include "kernels/cuda/device_model.h"

namespace gmmscore {

struct TensorCoreArgs {
  const float* big;               // (rows + 64) x cols, see TensorCoreLayout
  const float* small;
  const int32_t* row_group_state;
  const int32_t* range_begin;     // in row groups; num_ranges + 1
  int num_ranges;                 // (the mma.sync kernel takes its range from gridDim.y)
  const float* center;
  const float* features;          // num_frames x dim
  int64_t num_frames;
  int dim;
  int cols;
  int num_states;
  float* loglikes;                // num_frames x num_states
};

// Frames [first, first + frames) of a window scored by `model`.
inline TensorCoreArgs MakeTensorCoreArgs(const DeviceModel& model, const float* features,
                                         int64_t first, int64_t frames, float* loglikes) {
  TensorCoreArgs args{};
  args.big = model.tc_big.data();
  args.small = model.tc_small.data();
  args.row_group_state = model.tc_row_group_state.data();
  args.range_begin = model.tc_range_begin.data();
  args.num_ranges = model.tc_ranges;
  args.center = model.center.data();
  args.features = features + first * model.dim;
  args.num_frames = frames;
  args.dim = model.dim;
  args.cols = model.tc_cols;
  args.num_states = model.num_states;
  args.loglikes = loglikes + first * model.num_states;
  return args;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_TENSOR_CORE_ARGS_H_
