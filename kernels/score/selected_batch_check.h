// A test shared by every backend: one ScoreBatch call whose windows ask for
// state selections (ScoreWindow::select: top 1, top 7, a k above the state
// count, top k within a beam, a beam alone, an empty window) among dense
// windows, and its dense twin (the same windows, none selecting), over
// a 5003-state model (states past many blocks and not a multiple of one),
// a 131-state model with uneven and single-Gaussian states, and a model
// whose states come in identical pairs (exact ties at every cut-off). A
// window the backend selects for must hold exactly SelectStates of its
// twin's scores (same states, same values), any other window its twin's
// scores bit for bit; both with the twin's frame totals, and every twin
// within `bound` of the float64 reference. Results are poisoned first (stale sparse scores,
// NaN matrices). The same for selected windows beside a fusion in one
// ScoreFusedBatch call (whose fused scores must not change). Also checks
// that a fused window with a selection is INVALID_ARGUMENT.
//
//   ExpectSelectedBatchMatchesHostSelection(*backend, bound, /*selects_top_k=*/true);
#ifndef GMMSCORE_KERNELS_SCORE_SELECTED_BATCH_CHECK_H_
#define GMMSCORE_KERNELS_SCORE_SELECTED_BATCH_CHECK_H_

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Records gtest failures; `bound` applies to MaxNormalizedError. A window
// may come back dense (bitwise its twin: the caller selects), except that
// with `selects_top_k` every window asking for a top_k below its state
// count must come back selected.
void ExpectSelectedBatchMatchesHostSelection(ScoringBackend& backend, double bound, bool selects_top_k);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_SELECTED_BATCH_CHECK_H_
