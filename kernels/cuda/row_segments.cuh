// Launches of one block per row over rows laid out in segments (a fused
// chunk, a window): which segment a block's row belongs to.
#ifndef GMMSCORE_KERNELS_CUDA_ROW_SEGMENTS_CUH_
#define GMMSCORE_KERNELS_CUDA_ROW_SEGMENTS_CUH_

#include <cstdint>

namespace gmmscore {

// The index of the last of `count` segments (ordered by their first_row,
// the first starting at row 0, count >= 1) that starts at or before `row`:
// a binary search, cheap next to the row's work, so that segments of any
// sizes share one launch without a per-row table.
template <typename Segment>
__device__ __forceinline__ int SegmentOfRow(const Segment* segments, int count, int64_t row) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (segments[mid].first_row <= row) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_ROW_SEGMENTS_CUH_
