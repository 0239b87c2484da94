#include "kernels/train/natural_gmm.h"

#include <numeric>

#include "kernels/core/status_macros.h"

namespace gmmscore {

NaturalGmm NaturalGmm::FromModel(const DiagGmmModel& model) {
  NaturalGmm gmm;
  gmm.dim = model.dim();
  gmm.states.resize(model.num_states());
  for (int s = 0; s < model.num_states(); ++s) {
    NaturalState& state = gmm.states[s];
    for (int64_t g = model.state_offsets()[s]; g < model.state_offsets()[s + 1]; ++g) {
      const NaturalGaussian gauss = model.Natural(g);
      state.weights.push_back(gauss.weight);
      state.means.insert(state.means.end(), gauss.mean.begin(), gauss.mean.end());
      state.variances.insert(state.variances.end(), gauss.variance.begin(), gauss.variance.end());
    }
  }
  return gmm;
}

int64_t NaturalGmm::num_gaussians() const {
  int64_t total = 0;
  for (const NaturalState& state : states) total += state.num_gaussians();
  return total;
}

absl::StatusOr<DiagGmmModel> NaturalGmm::ToModel() const {
  DiagGmmModelBuilder builder(dim);
  for (const NaturalState& state : states) {
    std::vector<double> weights = state.weights;
    const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
    if (sum > 0.0) {
      for (double& w : weights) w /= sum;
    }
    GMM_RETURN_IF_ERROR(builder.AddState(weights, state.means, state.variances));
  }
  return std::move(builder).Build();
}

}  // namespace gmmscore
