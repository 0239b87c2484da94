// FmllrGatherTarget: a live stream's fMLLR statistics, gathered by the
// backend that scores the stream, in the same call as its scores (issue 20:
// "the scheduler accumulates the adaptive streams' statistics in the same
// batch as their scoring"). For every frame of a window that names a target
// (ScoreWindow::gather), the backend
//   1. takes the state posteriors from the window's own scores, as
//      PairsFromScores does on the host (kernels/train/state_posteriors.h:
//      a softmax over the states, PosteriorPolicy's floor and silence);
//   2. takes each kept state's Gaussian posteriors from the window's raw
//      frames (before its transform: statistics are always of the frames as
//      sent), in float64 from the model's scoring form;
//   3. adds beta, K and the G_i of those frames (kernels/train/fmllr_stats.h)
//      into one of the target's segments, in float64.
// The host then reads a segment (Take) only when an update is due: no
// scores, frames or per-frame terms cross to the host for adaptation.
//
//   GMM_ASSIGN_OR_RETURN(auto target, backend.CreateFmllrGather(*prepared, policy));
//   window.gather = target.get(); window.gather_segment = k % FmllrGatherTarget::kSegments;
//   ... ScoreBatch(windows) ...     // every window of segment k scored
//   std::vector<double> sums(FmllrGatherValues(dim));
//   GMM_RETURN_IF_ERROR(target->Take(k % FmllrGatherTarget::kSegments, absl::MakeSpan(sums)));
//   GMM_ASSIGN_OR_RETURN(FmllrStats stats, FmllrStatsFromGathered(dim, sums));  // fmllr_stats.h
//
// Segments let an update read exactly a prefix of the stream: windows after
// the update's last chunk may already be scoring (another lane, another
// batch) while it is read, and they name the next segment.
//
// Layout of the sums, for dimension D (E = D + 1, P = E (E + 1) / 2):
//   [0]                      beta
//   [1, 1 + D E)             K, row-major (row i: E values)
//   [1 + D E, 1 + D E + D P) G_i's upper triangles, i = 0 .. D-1, each
//                            row-major over p <= q (FmllrPackedIndex)
//
// Thread safety: a target may be named by windows of concurrent calls (its
// sums are added atomically); Take must not run while a window naming the
// same segment is being scored, and is otherwise thread-safe.
#ifndef GMMSCORE_KERNELS_SCORE_FMLLR_GATHER_H_
#define GMMSCORE_KERNELS_SCORE_FMLLR_GATHER_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace gmmscore {

// Values of one segment's sums for dimension `dim` (see the layout above).
inline int64_t FmllrGatherValues(int dim) {
  const int64_t ext = dim + 1;
  return 1 + dim * ext + dim * (ext * (ext + 1) / 2);
}

// Index of (p, q), p <= q < ext, in a row-major packed upper triangle.
inline int64_t FmllrPackedIndex(int64_t p, int64_t q, int64_t ext) {
  return p * ext - p * (p - 1) / 2 + (q - p);
}

class FmllrGatherTarget {
 public:
  // Segments per target: the one an update is about to read and the one
  // after it. A stream whose next chunk would need a third keeps that chunk
  // off the device (the daemon gathers it on the host instead).
  static constexpr int kSegments = 2;

  virtual ~FmllrGatherTarget() = default;

  virtual int dim() const = 0;

  // A call that gathered into this target failed after its gathering was
  // queued or ran (its sums are unknown, and the call's windows will be
  // scored again): Take refuses from then on, and callers stop naming it.
  void Poison() { poisoned_.store(true, std::memory_order_release); }
  bool poisoned() const { return poisoned_.load(std::memory_order_acquire); }

  // Adds segment `segment`'s sums to `sums` (FmllrGatherValues(dim())
  // values) and zeroes the segment. INVALID_ARGUMENT for a bad segment or
  // span size; FAILED_PRECONDITION once a call that gathered into this
  // target failed after its gathering was queued (its sums are unknown);
  // the device's error otherwise. On error `sums` is unchanged.
  virtual absl::Status Take(int segment, absl::Span<double> sums) = 0;

 private:
  std::atomic<bool> poisoned_{false};
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FMLLR_GATHER_H_
