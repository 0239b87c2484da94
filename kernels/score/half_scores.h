// HalfScores: a T x S score matrix in half precision relative to each
// frame's best, as OutputOptions.float16 sends it (proto/half_float.h,
// proto/wire_convert.h), made where the scores lie (ScoreWindow::
// half_from_best, the CUDA backend):
//   frame_best[t] = max_s loglikes[t][s] (+0 for -0), or 0 where that is
//                   not finite;
//   values[t * S + s] = binary16(loglikes[t][s] - frame_best[t]), rounded
//   to nearest even, finite differences saturated to +-65504.
#ifndef GMMSCORE_KERNELS_SCORE_HALF_SCORES_H_
#define GMMSCORE_KERNELS_SCORE_HALF_SCORES_H_

#include <cstdint>
#include <vector>

#include "kernels/core/block_array.h"

namespace gmmscore {

struct HalfScores {
  int64_t num_states = 0;
  // T x S, row-major: a vector, or (from the CUDA backend) a pinned block
  // the GPU copied them into, shared with nothing else.
  BlockArray<uint16_t> values;
  std::vector<float> frame_best;  // T

  int64_t num_frames() const { return static_cast<int64_t>(frame_best.size()); }
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_HALF_SCORES_H_
