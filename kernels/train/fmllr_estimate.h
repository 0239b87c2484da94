// fMLLR estimation from FmllrStats (fmllr_stats.h): the transform W = [A b]
// (D x (D+1), float64, row-major; features map to y = A x + b) that
// maximises
//   F(W) = beta log|det A| + sum_i (w_i . K[i] - 1/2 w_i G_i w_i^T),
// as Kaldi's FmllrDiagGmmAccs::Update does it (Gales 1998):
//   - full: the row-by-row update (ComputeFmllrMatrixDiagGmmFull). Per row
//     i, with c the cofactor row of A extended by 0, the row maximising F
//     with the others fixed is w_i = G_i^{-1} (alpha c + k_i), alpha the root
//     of e1 alpha^2 + e2 alpha - beta = 0 (e1 = c G_i^{-1} c^T, e2 = c G_i^{-1}
//     k_i^T) with the larger objective. Each row step maximises F exactly, so
//     F never decreases; num_iterations sweeps over all rows.
//   - diagonal: per-dimension scale and offset in closed form
//     (ComputeFmllrMatrixDiagGmmDiagonal);
//   - offset: A = I and the offset alone (ComputeFmllrMatrixDiagGmmOffset);
//   - identity.
// Which one: count = beta. count > min_count_full: full; count > min_count:
// the `fallback`; otherwise the identity. Degenerate statistics fall further
// instead of giving NaN: a G_i that is not numerically positive definite
// (no frames, one frame, fewer frames than D + 1, a constant feature)
// rules out full; a singular 2x2 block [G_i(i,i) G_i(i,D); G_i(D,i) G_i(D,D)]
// rules out diagonal; G_i(D,D) <= 0 rules out offset; so does a result or
// objective that is not finite, or a full update whose objective ends below
// its start (where Kaldi keeps the starting transform). From full the chain is
// full -> fallback -> offset -> identity (diagonal is skipped when the
// fallback is offset). The report says which mode was used and why.
//
// The fast path factors each G_i once (Cholesky) and keeps A^{-1} up to date
// with a rank-one (Sherman-Morrison) step per row, refreshed by an LU
// inverse each sweep; the float64 reference with explicit inverses and
// determinants is fmllr_reference.h (same statistics: transforms within 1e-6).
//
//   GMM_ASSIGN_OR_RETURN(FmllrResult fmllr, EstimateFmllr(stats, FmllrOptions()));
//   LOG << FmllrModeName(fmllr.report.mode) << " gain " << fmllr.report.gain_per_frame;
//
// Thread safety: pure functions.
#ifndef GMMSCORE_KERNELS_TRAIN_FMLLR_ESTIMATE_H_
#define GMMSCORE_KERNELS_TRAIN_FMLLR_ESTIMATE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/train/fmllr_stats.h"

namespace gmmscore {

// Kaldi's --fmllr-update-type values: "none", "offset", "diag", "full".
enum class FmllrMode { kIdentity, kOffset, kDiagonal, kFull };

struct FmllrOptions {
  int num_iterations = 10;         // sweeps of the full update
  double min_count = 50.0;         // count at or below this: the identity
  double min_count_full = 500.0;   // count above this: full; between: `fallback`
  FmllrMode fallback = FmllrMode::kDiagonal;  // kDiagonal, kOffset or kIdentity
  // A G_i whose Cholesky pivot ratio (see fmllr_linalg.h) is at most this
  // counts as singular.
  double singular_ratio = 1e-10;
};

struct FmllrReport {
  double count = 0.0;  // beta
  FmllrMode mode = FmllrMode::kIdentity;
  // Why a mode other than full was used ("count 42 is at most min_count
  // 50", "full: G_3 is singular", ...); empty for full.
  std::string reason;
  // F at the starting transform, then after each sweep (full), or at the
  // identity and at the result (diagonal, offset), or at the identity alone.
  std::vector<double> objective;
  double objective_gain = 0.0;  // objective.back() - objective.front()
  double gain_per_frame = 0.0;  // objective_gain / count; 0 when count <= 0
};

struct FmllrResult {
  std::vector<double> transform;  // D x (D+1), row-major [A | b]
  FmllrReport report;
};

// Estimates W from `stats`. `initial` (D x (D+1), empty: the identity) is
// where the full update starts; the diagonal and offset modes are closed
// forms from the identity, and the identity mode gives the identity, not
// `initial`. Errors: INVALID_ARGUMENT for malformed or non-finite statistics,
// options out of range (negative iterations or counts, min_count_full <
// min_count, fallback kFull, singular_ratio outside [0, 1)), or an initial
// transform of the wrong size, with non-finite values or a singular A.
// Degenerate statistics are not errors (see the file comment).
absl::StatusOr<FmllrResult> EstimateFmllr(const FmllrStats& stats, const FmllrOptions& options,
                                          absl::Span<const double> initial = {});

// F(W) for `transform` (D x (D+1)). INVALID_ARGUMENT for malformed
// statistics, a transform of the wrong size or a singular A.
absl::StatusOr<double> FmllrObjective(const FmllrStats& stats, absl::Span<const double> transform);

// The transform applying `inner` first, then `outer` (both D x (D+1)):
// [A_o A_i | A_o b_i + b_o], as Kaldi's compose-transforms does for the
// passes of multi-pass adaptation. INVALID_ARGUMENT unless both have
// dim x (dim + 1) values.
absl::StatusOr<std::vector<double>> ComposeFmllr(int dim, absl::Span<const double> outer,
                                                 absl::Span<const double> inner);

// The D x (D+1) identity transform.
std::vector<double> IdentityFmllr(int dim);

// "none", "offset", "diag", "full" (Kaldi's names), and back; ParseFmllrMode
// gives INVALID_ARGUMENT for any other name.
absl::string_view FmllrModeName(FmllrMode mode);
absl::StatusOr<FmllrMode> ParseFmllrMode(absl::string_view name);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_FMLLR_ESTIMATE_H_
