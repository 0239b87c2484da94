// Frames kept in host memory: the FrameBlock of the CPU statistics backends
// (the reference and the BLAS path), which compute on the host.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<FrameBlock> block, LoadHostFrames(frames));
//   const FloatMatrix& held = static_cast<const HostFrameBlock&>(*block).frames();
#ifndef GMMSCORE_KERNELS_TRAIN_HOST_FRAME_BLOCK_H_
#define GMMSCORE_KERNELS_TRAIN_HOST_FRAME_BLOCK_H_

#include <algorithm>
#include <memory>
#include <utility>

#include "kernels/core/status_macros.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

class HostFrameBlock : public FrameBlock {
 public:
  explicit HostFrameBlock(FloatMatrix frames) : frames_(std::move(frames)) {}
  int64_t num_frames() const override { return frames_.rows(); }
  int dim() const override { return static_cast<int>(frames_.cols()); }
  const FloatMatrix& frames() const { return frames_; }

 private:
  FloatMatrix frames_;
};

// A copy of `frames` after ValidateFrames (INVALID_ARGUMENT naming the
// first unusable value).
inline absl::StatusOr<std::unique_ptr<FrameBlock>> LoadHostFrames(ConstMatrixView frames) {
  GMM_RETURN_IF_ERROR(ValidateFrames(frames));
  FloatMatrix copy(frames.rows, frames.cols);
  for (int64_t t = 0; t < frames.rows; ++t) std::copy_n(frames.row(t), frames.cols, copy.row(t));
  return std::unique_ptr<FrameBlock>(new HostFrameBlock(std::move(copy)));
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_HOST_FRAME_BLOCK_H_
