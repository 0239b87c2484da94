// NaturalGmm: a diagonal GMM acoustic model in natural parameters (weights,
// means, variances) and float64, the form the ML and MAP updates, mixing-up
// and initialisation work in (Kaldi's DiagGmmNormal, one per pdf).
//
//   NaturalGmm gmm = NaturalGmm::FromModel(model);
//   ... update gmm.states[s] ...
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel next, gmm.ToModel());
#ifndef GMMSCORE_KERNELS_TRAIN_NATURAL_GMM_H_
#define GMMSCORE_KERNELS_TRAIN_NATURAL_GMM_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

struct NaturalState {
  std::vector<double> weights;    // G
  std::vector<double> means;      // G x D
  std::vector<double> variances;  // G x D
  int num_gaussians() const { return static_cast<int>(weights.size()); }
};

struct NaturalGmm {
  int dim = 0;
  std::vector<NaturalState> states;

  static NaturalGmm FromModel(const DiagGmmModel& model);
  int num_states() const { return static_cast<int>(states.size()); }
  int64_t num_gaussians() const;

  // The scoring form. Each state's weights are scaled to sum to 1 first
  // (Kaldi leaves the small excess that flooring weights at a minimum adds;
  // DiagGmmModel requires the sum). Errors as DiagGmmModelBuilder's.
  absl::StatusOr<DiagGmmModel> ToModel() const;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_NATURAL_GMM_H_
