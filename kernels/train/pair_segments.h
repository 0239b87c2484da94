// Pairs grouped by target (set * S + state): the order every statistics
// backend works in, so that each state's Gaussians meet all their frames in
// one place and the sums come out in an order that does not depend on
// threads or launches.
//
//   PairSegments segments = GroupPairsByTarget(pairs, /*num_frames=*/T);
//   for (const PairSegment& seg : segments.segments)
//     for (int64_t i = seg.begin; i < seg.end; ++i) use(segments.frames[i], segments.weights[i]);
//
// Empty `pairs` (a global GMM) gives one segment, target 0, holding every
// frame with weight 1 in frame order.
#ifndef GMMSCORE_KERNELS_TRAIN_PAIR_SEGMENTS_H_
#define GMMSCORE_KERNELS_TRAIN_PAIR_SEGMENTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

struct PairSegment {
  int32_t target = 0;
  int64_t begin = 0;  // into PairSegments::frames / weights
  int64_t end = 0;
};

struct PairSegments {
  std::vector<int32_t> frames;  // frame of each pair, grouped by target
  std::vector<float> weights;
  std::vector<PairSegment> segments;  // increasing target, only non-empty ones
  double total_weight = 0.0;          // sum of all weights, in float64
};

// Stable within a target (pairs keep their given order). O(pairs + targets).
PairSegments GroupPairsByTarget(absl::Span<const StatsPair> pairs, int64_t num_frames);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_PAIR_SEGMENTS_H_
