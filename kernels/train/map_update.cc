#include "kernels/train/map_update.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/mle_update.h"

namespace gmmscore {
namespace {

void AdaptGaussian(const MapOptions& options, double occ, const double* sum_x,
                   const double* sum_x2, int dim, int64_t g, NaturalState& state) {
  double* mean = &state.means[g * dim];
  double* var = &state.variances[g * dim];
  for (int d = 0; d < dim; ++d) {
    double new_mean = mean[d];
    if (options.update & kGmmMeans) {
      new_mean = (sum_x[d] + options.mean_tau * mean[d]) / (occ + options.mean_tau);
    }
    if (options.update & kGmmVariances) {
      const double data_var = sum_x2[d] / occ - 2.0 * new_mean * sum_x[d] / occ + new_mean * new_mean;
      const double v = (occ * data_var + options.variance_tau * var[d]) / (occ + options.variance_tau);
      var[d] = std::max(v, options.min_variance);
    }
    mean[d] = new_mean;
  }
}

}  // namespace

absl::StatusOr<NaturalGmm> MapUpdate(const NaturalGmm& gmm, const GmmStats& stats,
                                     const MapOptions& options, int set) {
  GMM_RETURN_IF_ERROR(CheckStatsShape(gmm, stats, set));
  if (options.mean_tau < 0 || options.variance_tau < 0 || options.weight_tau < 0 ||
      !(options.min_variance > 0)) {
    return absl::InvalidArgumentError("MAP taus must be >= 0 and the min variance > 0");
  }
  const int dim = gmm.dim;
  NaturalGmm next = gmm;
  for (int s = 0; s < next.num_states(); ++s) {
    NaturalState& state = next.states[s];
    const int64_t row0 = set * stats.num_gaussians() + stats.state_offsets[s];
    const double state_occ = stats.StateOccupancy(set, s);
    for (int64_t g = 0; g < state.num_gaussians(); ++g) {
      const double occ = stats.occupancy[row0 + g];
      const double* sum_x = &stats.mean_acc[(row0 + g) * dim];
      const double* sum_x2 = &stats.var_acc[(row0 + g) * dim];
      if (!std::isfinite(occ) || !std::isfinite(sum_x[0]) || !std::isfinite(sum_x2[0])) {
        return absl::InvalidArgumentError(absl::StrCat("statistics of state ", s, " Gaussian ", g,
                                                       " are not finite"));
      }
      if ((options.update & kGmmWeights) && state_occ + options.weight_tau > 0) {
        state.weights[g] = (occ + options.weight_tau * gmm.states[s].weights[g]) /
                           (state_occ + options.weight_tau);
      }
      if (occ > 0.0) AdaptGaussian(options, occ, sum_x, sum_x2, dim, g, state);
    }
  }
  return next;
}

}  // namespace gmmscore
