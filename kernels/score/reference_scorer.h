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
double MaxAbsError(const FloatMatrix& scores, const std::vector<double>& reference);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_REFERENCE_SCORER_H_
