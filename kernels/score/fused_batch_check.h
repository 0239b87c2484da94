// A test shared by every backend: ScoringBackend::ScoreFusedBatch over two
// streams fused chunk after chunk (uneven chunk sizes, a 1-frame chunk,
// one stream ending early), beside a plain window of another model in the
// same calls, for every fusion method; one stream asks for its models'
// scores and the fused frame totals, the other for the fused scores only.
// Compared with the float64 reference: ReferenceLogLikelihoods per model,
// ReferenceFuse over each whole stream. Outputs are NaN-poisoned first.
// Also checks that malformed fusions are INVALID_ARGUMENT.
//
//   ExpectFusedBatchMatchesReference(*backend, bound);
#ifndef GMMSCORE_KERNELS_SCORE_FUSED_BATCH_CHECK_H_
#define GMMSCORE_KERNELS_SCORE_FUSED_BATCH_CHECK_H_

#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Records gtest failures; `bound` applies to MaxNormalizedError of model
// scores (fused scores get 4 * bound: a fused value mixes several).
void ExpectFusedBatchMatchesReference(ScoringBackend& backend, double bound);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FUSED_BATCH_CHECK_H_
