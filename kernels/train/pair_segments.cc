#include "kernels/train/pair_segments.h"

#include <algorithm>

namespace gmmscore {

PairSegments GroupPairsByTarget(absl::Span<const StatsPair> pairs, int64_t num_frames) {
  PairSegments out;
  if (pairs.empty()) {
    out.frames.resize(num_frames);
    for (int64_t t = 0; t < num_frames; ++t) out.frames[t] = static_cast<int32_t>(t);
    out.weights.assign(num_frames, 1.0f);
    if (num_frames > 0) out.segments.push_back({0, 0, num_frames});
    out.total_weight = static_cast<double>(num_frames);
    return out;
  }
  // Counting sort by target: stable, linear.
  int32_t max_target = 0;
  for (const StatsPair& pair : pairs) max_target = std::max(max_target, pair.target);
  std::vector<int64_t> start(static_cast<size_t>(max_target) + 2, 0);
  for (const StatsPair& pair : pairs) ++start[pair.target + 1];
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  out.frames.resize(pairs.size());
  out.weights.resize(pairs.size());
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (const StatsPair& pair : pairs) {
    const int64_t at = next[pair.target]++;
    out.frames[at] = pair.frame;
    out.weights[at] = pair.weight;
    out.total_weight += pair.weight;
  }
  for (int32_t target = 0; target <= max_target; ++target) {
    if (start[target + 1] > start[target]) out.segments.push_back({target, start[target], start[target + 1]});
  }
  return out;
}

}  // namespace gmmscore
