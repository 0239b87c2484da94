#include "kernels/frontend/live_cmn.h"

#include <utility>

namespace gmmscore {

LiveCmn::LiveCmn(std::vector<float> init) : mean_(std::move(init)), sum_(mean_.size()) {
  for (size_t i = 0; i < mean_.size(); ++i) sum_[i] = mean_[i] * kWindowFrames;
}

void LiveCmn::Apply(absl::Span<float> frame) {
  if (frame.empty() || frame[0] < 0) return;  // no energy: sphinxbase skips it
  for (size_t i = 0; i < mean_.size(); ++i) {
    sum_[i] += frame[i];
    frame[i] -= mean_[i];
  }
  if (++frames_ <= kHighWaterFrames) return;
  // cmn_live_shiftwin: the new mean, then the sum decayed to the window.
  const float scale = 1.0f / frames_;
  for (size_t i = 0; i < mean_.size(); ++i) mean_[i] = sum_[i] / frames_;
  for (size_t i = 0; i < mean_.size(); ++i) sum_[i] *= kWindowFrames * scale;
  frames_ = kWindowFrames;
}

}  // namespace gmmscore
