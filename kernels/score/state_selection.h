// StateSelection: which states of each frame an answer keeps (a decoder's
// beam or top-k, OutputOptions.beam / top_k in scorer.proto), and the kept
// states in CSR form. The selection is defined once here; the CUDA backend
// makes the same choice on the device (state_select_launch.h) so that only
// the kept states leave the GPU.
//
//   SparseScores kept = SelectStates(loglikes.view(), {.top_k = 100});
//   for (uint32_t i = kept.frame_offsets[t]; i < kept.frame_offsets[t + 1]; ++i)
//     use(kept.state_ids[i], kept.values[i]);
#ifndef GMMSCORE_KERNELS_SCORE_STATE_SELECTION_H_
#define GMMSCORE_KERNELS_SCORE_STATE_SELECTION_H_

#include <cstdint>
#include <vector>

#include "kernels/core/matrix.h"

namespace gmmscore {

// Per frame: the states scoring at least (best - beam) when beam > 0, of
// those at most the top_k best when top_k > 0 (ties at the cut-off: the
// lower state first). Neither set: every state (dense). Scores must not be
// NaN (no backend makes one from finite features): with NaN the host and
// the device may keep different states.
struct StateSelection {
  float beam = 0;
  int top_k = 0;
  bool dense() const { return beam <= 0 && top_k <= 0; }
};

// The kept states of a T x S score matrix: frame t's are state_ids and
// values [frame_offsets[t], frame_offsets[t + 1]), states ascending.
struct SparseScores {
  int64_t num_states = 0;
  std::vector<uint32_t> frame_offsets = {0};  // T + 1
  std::vector<uint32_t> state_ids;
  std::vector<float> values;

  int64_t num_frames() const { return static_cast<int64_t>(frame_offsets.size()) - 1; }
};

// Every row's kept states, ascending, with their scores.
SparseScores SelectStates(ConstMatrixView scores, const StateSelection& keep);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_STATE_SELECTION_H_
