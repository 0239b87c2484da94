// FmllrStats: the sufficient statistics of an fMLLR transform W = [A b]
// (D x (D+1), y = A x + b) for a diagonal GMM (Gales 1998), as Kaldi's
// FmllrDiagGmmAccs holds them, and FmllrAccumulator, the fast CPU path that
// gathers them from frames and a model's Gaussian posteriors.
//
//   FmllrAccumulator accumulator(model);
//   FmllrStats stats = FmllrStats::ForDim(model.dim());
//   GMM_ASSIGN_OR_RETURN(double loglike, accumulator.Accumulate(frames, pairs, &stats));
//   GMM_RETURN_IF_ERROR(total.Add(stats));  // sums of several utterances of a speaker
//
// With x~ = [x; 1] and gamma the posterior of Gaussian (mu, var) for frame x:
//   beta   = sum gamma
//   K[i]   = sum gamma mu_i / var_i x~^T        (row i, D+1 values)
//   G_i    = sum gamma / var_i x~ x~^T          ((D+1) x (D+1), symmetric)
// The objective of W is then (up to a constant)
//   F(W) = beta log|det A| + sum_i (w_i . K[i] - 1/2 w_i G_i w_i^T).
//
// Where posteriors come from is StatsBackend's vocabulary (stats_backend.h):
//   - no pairs: every frame, weight 1, state 0 (a global GMM / UBM); the
//     model must have exactly one state;
//   - StatsPair{frame, state, weight}: the frame's Gaussian posteriors within
//     that state times the weight (an alignment: one pair per frame; state
//     posteriors: several). Unlike GmmStats there are no sets: `target` is
//     the state, and one FmllrStats is one speaker's.
// Gaussian posteriors within a state are
//   gamma_tg = weight * exp(loglik_tg - logsumexp_{g' in s} loglik_tg').
//
// The fast path computes log-likelihoods and posteriors in float64 with
// DGEMM, sums each frame's Gaussian terms first (a_i = sum gamma / var_i,
// b_i = sum gamma mu_i / var_i, over all the frame's pairs), then adds
// K += b x~^T and every G_i += a_i x~ x~^T as one weighted-Gram DGEMM per
// block of frames (beta gains each pair's weight, the sum of its
// posteriors). Pairs are sorted into windows of 1024 frames, so memory does
// not grow with the input. At D = 39 and 64 Gaussians it takes 4.6 us a
// frame on one core of the development machine (the reference: 1.2 ms).
// The float64 reference is fmllr_reference.h.
//
// Thread safety: FmllrStats is a plain value. FmllrAccumulator is immutable
// after construction; Accumulate may run concurrently on different stats.
#ifndef GMMSCORE_KERNELS_TRAIN_FMLLR_STATS_H_
#define GMMSCORE_KERNELS_TRAIN_FMLLR_STATS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

struct FmllrStats {
  int dim = 0;
  double beta = 0.0;
  std::vector<double> k;  // D x (D+1), row-major
  std::vector<double> g;  // D matrices of (D+1) x (D+1), each full and row-major

  // Zero statistics for `dim`-dimensional features (dim < 1 gives
  // statistics that CheckShape refuses).
  static FmllrStats ForDim(int dim);

  int ext_dim() const { return dim + 1; }
  const double* k_row(int i) const { return &k[static_cast<size_t>(i) * ext_dim()]; }
  double* k_row(int i) { return &k[static_cast<size_t>(i) * ext_dim()]; }
  const double* g_matrix(int i) const { return &g[static_cast<size_t>(i) * ext_dim() * ext_dim()]; }
  double* g_matrix(int i) { return &g[static_cast<size_t>(i) * ext_dim() * ext_dim()]; }

  // Adds `other` element by element. INVALID_ARGUMENT (naming both
  // dimensions) when the shapes differ; *this stays unchanged.
  absl::Status Add(const FmllrStats& other);
  // OK when dim >= 1 and k and g have the sizes dim implies; otherwise
  // INVALID_ARGUMENT saying what is wrong.
  absl::Status CheckShape() const;
};

// Statistics from the sums a backend gathered while scoring
// (kernels/score/fmllr_gather.h: beta, K, then each G_i's packed upper
// triangle), made full and symmetric. INVALID_ARGUMENT for dim < 1 or a
// span whose size is not FmllrGatherValues(dim).
absl::StatusOr<FmllrStats> FmllrStatsFromGathered(int dim, absl::Span<const double> sums);

// The checks every fMLLR accumulation (fast and reference) applies before
// touching `stats`, for the shape of the model the posteriors come from
// (ModelShape::Of): INVALID_ARGUMENT for unusable feature values
// (feature_values.h), frames whose width is not the model's dimension
// (frames with no rows may have any width), statistics of another dimension
// or malformed, no pairs for a model of several states, a pair whose frame
// or state is out of range or whose weight is not finite.
absl::Status ValidateFmllrRequest(const ModelShape& model, ConstMatrixView frames,
                                  absl::Span<const StatsPair> pairs, const FmllrStats& stats);

class FmllrAccumulator {
 public:
  // Keeps what accumulation needs of `model` in float64 (its scoring form,
  // 1/var and mu/var of every Gaussian); `model` need not outlive this.
  explicit FmllrAccumulator(const DiagGmmModel& model);

  int dim() const { return shape_.dim; }

  // Adds the statistics of `frames` (T x D) under `pairs` (see the file
  // comment) to *stats and returns sum over pairs of weight * log p(x_t |
  // state), as Kaldi's AccumulateForGmm does. Errors: those of
  // ValidateFmllrRequest, and INVALID_ARGUMENT for a null `stats`, before
  // anything is added.
  absl::StatusOr<double> Accumulate(ConstMatrixView frames, absl::Span<const StatsPair> pairs,
                                    FmllrStats* stats) const;

 private:
  struct SortedPair;
  struct FrameTerms;
  struct GramSums;
  static std::vector<SortedPair> SortPairs(int64_t num_frames, absl::Span<const StatsPair> pairs);
  void AddStateBlock(ConstMatrixView frames, const SortedPair* pairs, int64_t count,
                     FrameTerms* terms) const;
  static void AddWindow(ConstMatrixView frames, const FrameTerms& terms, GramSums* sums);

  ModelShape shape_;
  std::vector<double> center_;   // D
  std::vector<double> scoring_;  // Gtot x (1 + 2D): [K, u, v], loglik = K + u.y + v.y^2, y = x - c
  std::vector<double> terms_;    // Gtot x 2D: [1/var, mu/var] on raw features
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_FMLLR_STATS_H_
