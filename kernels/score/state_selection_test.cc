#include "kernels/score/state_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// The definition written the slow way: rank every state (value descending,
// lower state first), keep the first top_k of those within the beam.
std::vector<uint32_t> ReferenceKept(const float* row, int64_t states, const StateSelection& keep) {
  if (states == 0) return {};
  const float best = *std::max_element(row, row + states);
  std::vector<uint32_t> order(states);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
  std::vector<uint32_t> kept;
  for (uint32_t s : order) {
    if (keep.top_k > 0 && static_cast<int64_t>(kept.size()) >= keep.top_k) break;
    if (keep.beam > 0 && row[s] < best - keep.beam) continue;
    kept.push_back(s);
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

// Scores with many exact ties (values on a coarse grid), -inf states and
// one row all -inf, so that cut-offs fall inside runs of equal values.
FloatMatrix TiedScores(int64_t frames, int64_t states, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> grid(-40, 0);
  FloatMatrix out(frames, states);
  for (int64_t t = 0; t < frames; ++t) {
    for (int64_t s = 0; s < states; ++s) {
      out.at(t, s) = grid(rng) % 7 == 0 ? -std::numeric_limits<float>::infinity() : 0.5f * grid(rng) - 50.0f;
    }
  }
  if (frames > 2) {
    for (int64_t s = 0; s < states; ++s) out.at(2, s) = -std::numeric_limits<float>::infinity();
  }
  return out;
}

TEST(StateSelectionTest, MatchesTheDefinitionOnTiesAndInfinities) {
  const StateSelection cases[] = {{.beam = 0, .top_k = 1},   {.beam = 0, .top_k = 7},
                                  {.beam = 2.5f, .top_k = 0}, {.beam = 3.0f, .top_k = 5},
                                  {.beam = 0.5f, .top_k = 40}, {.beam = 0, .top_k = 37},
                                  {.beam = 0, .top_k = 1000}};
  for (int64_t states : {1, 2, 37, 301}) {
    const FloatMatrix scores = TiedScores(9, states, 17 + states);
    for (const StateSelection& keep : cases) {
      const SparseScores kept = SelectStates(scores.view(), keep);
      ASSERT_EQ(kept.num_frames(), 9);
      EXPECT_EQ(kept.num_states, states);
      ASSERT_EQ(kept.state_ids.size(), kept.values.size());
      for (int64_t t = 0; t < 9; ++t) {
        const std::vector<uint32_t> want = ReferenceKept(scores.row(t), states, keep);
        const std::vector<uint32_t> got(kept.state_ids.begin() + kept.frame_offsets[t],
                                        kept.state_ids.begin() + kept.frame_offsets[t + 1]);
        EXPECT_EQ(got, want) << "states " << states << " frame " << t << " beam " << keep.beam << " top_k "
                             << keep.top_k;
        for (uint32_t i = kept.frame_offsets[t]; i < kept.frame_offsets[t + 1]; ++i) {
          EXPECT_EQ(kept.values[i], scores.at(t, kept.state_ids[i]));
        }
      }
    }
  }
}

TEST(StateSelectionTest, DenseKeepsEveryStateAndNoFramesGiveOneOffset) {
  const FloatMatrix scores = TiedScores(3, 11, 5);
  const SparseScores all = SelectStates(scores.view(), {});
  EXPECT_EQ(all.state_ids.size(), 33u);
  EXPECT_EQ(all.frame_offsets, (std::vector<uint32_t>{0, 11, 22, 33}));
  EXPECT_TRUE(StateSelection{}.dense());
  EXPECT_FALSE((StateSelection{.top_k = 3}.dense()));

  const FloatMatrix empty(0, 11);
  const SparseScores none = SelectStates(empty.view(), {.top_k = 3});
  EXPECT_EQ(none.num_frames(), 0);
  EXPECT_EQ(none.frame_offsets, std::vector<uint32_t>{0});
}

}  // namespace
}  // namespace gmmscore
