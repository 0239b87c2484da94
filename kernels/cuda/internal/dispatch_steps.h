// The tensor-core kernels keep a frame's operand in registers, so their
// k extent (steps of 8 columns, 1 + 2D columns in all) is a template
// argument: one instance per step count they are compiled for. This picks the
// smallest instance that covers `steps`, for both launchers.
//
//   return DispatchBySteps(model.tc_cols / 8, [&](auto steps) {
//     return LaunchSteps<decltype(steps)::value>(...);
//   }, absl::InvalidArgumentError("too wide"));
#ifndef GMMSCORE_KERNELS_CUDA_INTERNAL_DISPATCH_STEPS_H_
#define GMMSCORE_KERNELS_CUDA_INTERNAL_DISPATCH_STEPS_H_

#include <type_traits>

#include "absl/status/status.h"

namespace gmmscore {

// The instances: up to 12 steps = 96 columns, D <= 47.
inline constexpr int kMaxTensorCoreSteps = 12;

// launch(std::integral_constant<int, S>{}) for the smallest S of 4, 6, 8,
// 10, 12 with steps <= S; `too_wide` when steps > 12.
template <typename Launch>
absl::Status DispatchBySteps(int steps, Launch&& launch, const absl::Status& too_wide) {
  if (steps <= 4) return launch(std::integral_constant<int, 4>{});
  if (steps <= 6) return launch(std::integral_constant<int, 6>{});
  if (steps <= 8) return launch(std::integral_constant<int, 8>{});
  if (steps <= 10) return launch(std::integral_constant<int, 10>{});
  if (steps <= kMaxTensorCoreSteps) return launch(std::integral_constant<int, 12>{});
  return too_wide;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_INTERNAL_DISPATCH_STEPS_H_
