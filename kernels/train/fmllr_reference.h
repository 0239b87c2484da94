// The float64 references for fMLLR: statistics accumulated by their
// definition, Gaussian by Gaussian, and the updates written the obvious way
// (explicit inverses by Gauss-Jordan, determinants by elimination, true
// cofactors, Kaldi's root formulas). Slow and obviously right; FmllrAccumulator
// and EstimateFmllr are tested against them.
//
//   FmllrStats want = FmllrStats::ForDim(model.dim());
//   GMM_ASSIGN_OR_RETURN(double loglike, AccumulateFmllrStatsReference(model, frames, pairs, &want));
//   std::vector<double> objective;
//   std::vector<double> w = FmllrFullReference(want, IdentityFmllr(dim), 10, &objective);
//
// Thread safety: pure functions.
#ifndef GMMSCORE_KERNELS_TRAIN_FMLLR_REFERENCE_H_
#define GMMSCORE_KERNELS_TRAIN_FMLLR_REFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// As FmllrAccumulator::Accumulate (same pairs semantics, same errors), with
// every posterior from the model's natural parameters (DiagGmmModel::Natural).
absl::StatusOr<double> AccumulateFmllrStatsReference(const DiagGmmModel& model,
                                                     ConstMatrixView frames,
                                                     absl::Span<const StatsPair> pairs,
                                                     FmllrStats* stats);

// F(W) = beta log|det A| + sum_i (w_i . K[i] - 1/2 w_i G_i w_i^T).
double FmllrObjectiveReference(const FmllrStats& stats, const std::vector<double>& transform);

// `iterations` row-by-row sweeps from `start`; *objective (optional) gets F
// at the start and after each sweep. The statistics must have beta > 0 and
// invertible G_i (no checks: this is a test oracle).
std::vector<double> FmllrFullReference(const FmllrStats& stats, std::vector<double> start,
                                       int iterations, std::vector<double>* objective);

// The diagonal (scale and offset per dimension) and offset-only transforms
// from the identity, as Kaldi's ComputeFmllrMatrixDiagGmmDiagonal and
// ComputeFmllrMatrixDiagGmmOffset compute them.
std::vector<double> FmllrDiagonalReference(const FmllrStats& stats);
std::vector<double> FmllrOffsetReference(const FmllrStats& stats);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_FMLLR_REFERENCE_H_
