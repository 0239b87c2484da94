// Live cepstral mean normalisation: pocketsphinx's cmn_live (sphinxbase
// feat/cmn_live.c, pocketsphinx 5 cmn_set_repr) applied one frame at a time,
// so that what a stream gets does not depend on how its audio was cut.
//
//   LiveCmn cmn(pipeline.cmn_init);       // -cmninit, 13 values
//   for (each cepstral frame c) cmn.Apply(c);
//
// The running mean starts at -cmninit, as if it had been seen for
// kWindowFrames (500) frames. Each frame with c0 >= 0 has the current mean
// subtracted and is added to the running sum; a frame with c0 < 0 (no
// energy) is left as it is and not counted. Once more than kHighWaterFrames
// (800) frames are counted, the mean becomes sum / count and the sum is
// scaled back to kWindowFrames frames: the mean is updated every 301
// counted frames and forgets old speech exponentially. sphinxbase calls
// cmn_live once per block of frames and updates only at a block's end, so
// its output depends on the block sizes; here every frame is its own block.
// The arithmetic is float32, as sphinxbase's mfcc_t.
#ifndef GMMSCORE_KERNELS_FRONTEND_LIVE_CMN_H_
#define GMMSCORE_KERNELS_FRONTEND_LIVE_CMN_H_

#include <vector>

#include "absl/types/span.h"

namespace gmmscore {

class LiveCmn {
 public:
  static constexpr int kWindowFrames = 500;     // sphinxbase CMN_WIN
  static constexpr int kHighWaterFrames = 800;  // sphinxbase CMN_WIN_HWM

  // `init`: the starting mean, one value per cepstral dimension.
  explicit LiveCmn(std::vector<float> init);

  // Normalises one frame in place (its size is the init's).
  void Apply(absl::Span<float> frame);

  const std::vector<float>& mean() const { return mean_; }

 private:
  std::vector<float> mean_;
  std::vector<float> sum_;
  int frames_ = kWindowFrames;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_FRONTEND_LIVE_CMN_H_
