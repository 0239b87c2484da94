// Random sparse HMM graphs for the graph recursion tests: the shapes an
// utterance graph has (left-to-right chains with self-loops and skips,
// branches that join, several entries and exits), in any size.
#ifndef GMMSCORE_KERNELS_HMM_GRAPH_TEST_UTIL_H_
#define GMMSCORE_KERNELS_HMM_GRAPH_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/hmm_test_util.h"

namespace gmmscore {

// N states over `columns` emission columns (states share columns, as
// triphones share senones). Every state but the first has an arc from its
// predecessor; most have a self-loop; about a quarter get a skip of two,
// and a tenth an arc from up to 40 states back, making branches that join. The first state and a
// random few more are initial, the last and a few more final. Weights are
// log probabilities in [log 0.05, 0], not normalised.
inline HmmGraph RandomHmmGraph(int32_t n, int32_t columns, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> weight(std::log(0.05f), 0.0f);
  HmmGraphBuilder builder;
  for (int32_t s = 0; s < n; ++s) builder.AddState(static_cast<int32_t>(rng() % columns));
  std::set<std::pair<int32_t, int32_t>> arcs;
  for (int32_t s = 0; s < n; ++s) {
    if (rng() % 8 != 0) arcs.insert({s, s});
    if (s > 0) arcs.insert({s - 1, s});
    if (s > 1 && rng() % 4 == 0) arcs.insert({s - 2, s});
    if (s > 2 && rng() % 10 == 0) arcs.insert({static_cast<int32_t>(s - 1 - rng() % std::min<int32_t>(s, 40)), s});
  }
  for (const auto& [from, to] : arcs) builder.AddArc(from, to, weight(rng), static_cast<int32_t>(rng() % 7) - 1);
  builder.AddInitial(0, weight(rng));
  builder.AddFinal(n - 1, weight(rng), 0);
  for (int32_t s = 1; s + 1 < n; ++s) {
    if (rng() % 16 == 0) builder.AddInitial(s, weight(rng));
    if (rng() % 16 == 0) builder.AddFinal(s, weight(rng), -1);
  }
  std::vector<int32_t> column_states(columns);
  for (int32_t c = 0; c < columns; ++c) column_states[c] = 3 * c + 1;
  HmmGraph graph;
  (void)builder.Finish(std::move(column_states), &graph);
  return graph;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_GRAPH_TEST_UTIL_H_
