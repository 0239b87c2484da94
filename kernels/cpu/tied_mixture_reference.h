// The float64 reference for TiedMixtureModel: plain loops over the scoring
// form, every state evaluating its codebook on its own. For tests only.
//
//   std::vector<double> ll = TiedMixtureReferenceLogLikelihoods(model, features);
//   double ll_t_s = ll[t * model.num_states() + s];
#ifndef GMMSCORE_KERNELS_CPU_TIED_MIXTURE_REFERENCE_H_
#define GMMSCORE_KERNELS_CPU_TIED_MIXTURE_REFERENCE_H_

#include <vector>

#include "kernels/core/matrix.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

// T x S row-major state log-likelihoods in float64 from the model's float32
// scoring form and weights. Expects features.cols == model.dim().
std::vector<double> TiedMixtureReferenceLogLikelihoods(const TiedMixtureModel& model,
                                                       ConstMatrixView features);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CPU_TIED_MIXTURE_REFERENCE_H_
