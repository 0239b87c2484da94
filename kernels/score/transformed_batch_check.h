// A test shared by every backend: a batch of windows over models of
// different dimensions, some carrying a speaker transform (one shared by two
// windows, one D x D without offset, one on an empty window), scored in one
// ScoreBatch call and compared with the float64 reference on the float64
// transform of the frames. Also checks that a transform of the wrong
// dimension is INVALID_ARGUMENT.
//
//   ExpectTransformedBatchMatchesReference(*backend, {.algorithm = a}, bound);
#ifndef GMMSCORE_KERNELS_SCORE_TRANSFORMED_BATCH_CHECK_H_
#define GMMSCORE_KERNELS_SCORE_TRANSFORMED_BATCH_CHECK_H_

#include <memory>

#include "kernels/model/synthetic_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// A synthetic model (synthetic_model.h) prepared by `backend`; null after
// recording a gtest failure. Shared by the backends' batch checks.
std::shared_ptr<const PreparedModel> PrepareSynthetic(ScoringBackend& backend, const SyntheticModelSpec& spec);

// Records gtest failures; `bound` applies to MaxNormalizedError.
void ExpectTransformedBatchMatchesReference(ScoringBackend& backend, const ScoreOptions& options,
                                            double bound);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_TRANSFORMED_BATCH_CHECK_H_
