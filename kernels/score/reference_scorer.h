// The float64 reference: plain loops over the scoring form, for tests only.
//
//   std::vector<double> ll = ReferenceLogLikelihoods(model, features);
//   double ll_t_s = ll[t * model.num_states() + s];
#ifndef GMMSCORE_KERNELS_SCORE_REFERENCE_SCORER_H_
#define GMMSCORE_KERNELS_SCORE_REFERENCE_SCORER_H_

#include <vector>

#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// T x S row-major state log-likelihoods computed entirely in float64 from the
// model's (float32) scoring form. Expects features.cols == model.dim().
std::vector<double> ReferenceLogLikelihoods(const DiagGmmModel& model, ConstMatrixView features);

// Largest |a - b| over all elements of a T x S float matrix and the reference.
// NaN in `scores` counts as an infinite error.
double MaxAbsError(const FloatMatrix& scores, const std::vector<double>& reference);

// Largest |a - b| over the elements whose reference lies within
// +-`magnitude` nats (NaN counts as infinite).
double MaxAbsErrorWithin(const FloatMatrix& scores, const std::vector<double>& reference,
                         double magnitude);

// The magnitude up to which errors are judged in absolute nats.
inline constexpr double kAbsoluteErrorRange = 256.0;

// Largest |a - b| / max(1, |b| / kAbsoluteErrorRange): the absolute error
// for log-likelihoods within +-256 nats (every best-scoring state and the
// bulk of all states on speech-like input), and the error relative to
// |b| / 256 beyond. A float32 output cannot hold -3000 to 1e-4 nats (its
// spacing there is 2.4e-4), so a bound of 1e-4 on this measure means
// 1e-4 nats where float32 can express it and about 3 float32 ulps where it
// cannot. NaN counts as infinite.
double MaxNormalizedError(const FloatMatrix& scores, const std::vector<double>& reference);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_REFERENCE_SCORER_H_
