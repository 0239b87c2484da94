#include "kernels/score/state_selection.h"

#include <algorithm>
#include <limits>

namespace gmmscore {
namespace {

// The states of one frame's `row` (S scores) that `keep` keeps, ascending,
// into *kept (overwritten). One pass for the beam; top_k keeps a bounded min-heap of the best so far,
// which most states leave after one comparison with its root (an
// nth_element over 5000 states per frame made sparse answers slower to
// build than dense ones).
void KeptStates(const float* row, int64_t states, const StateSelection& keep,
                std::vector<uint32_t>* kept) {
  kept->clear();
  if (states == 0) return;
  float cutoff = -std::numeric_limits<float>::infinity();
  if (keep.beam > 0) cutoff = *std::max_element(row, row + states) - keep.beam;
  if (keep.top_k <= 0 || keep.top_k >= states) {
    for (int64_t s = 0; s < states; ++s) {
      if (row[s] >= cutoff) kept->push_back(static_cast<uint32_t>(s));
    }
    return;
  }
  // Ranked best first, the lower index winning ties: a state enters the
  // heap only if it beats its root (the worst kept so far).
  auto better = [row](uint32_t a, uint32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  const size_t k = static_cast<size_t>(keep.top_k);
  for (int64_t s = 0; s < states; ++s) {
    if (row[s] < cutoff) continue;
    const uint32_t state = static_cast<uint32_t>(s);
    if (kept->size() < k) {
      kept->push_back(state);
      std::push_heap(kept->begin(), kept->end(), better);
    } else if (better(state, kept->front())) {
      std::pop_heap(kept->begin(), kept->end(), better);
      kept->back() = state;
      std::push_heap(kept->begin(), kept->end(), better);
    }
  }
  std::sort(kept->begin(), kept->end());
}

}  // namespace

SparseScores SelectStates(ConstMatrixView scores, const StateSelection& keep) {
  SparseScores out;
  out.num_states = scores.cols;
  out.frame_offsets.reserve(scores.rows + 1);
  std::vector<uint32_t> kept;
  for (int64_t t = 0; t < scores.rows; ++t) {
    const float* row = scores.row(t);
    KeptStates(row, scores.cols, keep, &kept);
    for (uint32_t s : kept) {
      out.state_ids.push_back(s);
      out.values.push_back(row[s]);
    }
    out.frame_offsets.push_back(static_cast<uint32_t>(out.state_ids.size()));
  }
  return out;
}

}  // namespace gmmscore
