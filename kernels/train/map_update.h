// MAP adaptation of a diagonal GMM acoustic model to one speaker's
// statistics, as Kaldi's MapDiagGmmUpdate (src/gmm/mle-diag-gmm.cc) and
// gmm-adapt-map do it, state by state:
//   weight  = (occ + tau_w w_old) / (state_occ + tau_w)
//   mean    = (sum gx + tau_m mu_old) / (occ + tau_m)
//   var     = occ/(occ + tau_v) (E[x^2] - 2 mu E[x] + mu^2)
//             + tau_v/(occ + tau_v) var_old,  around the new mean
// where E[.] are the Gaussian's occupancy-normalised sums. Gaussians with no
// occupancy keep their mean and variance. Only parameters in `update`
// change (means only by default).
//
//   GMM_ASSIGN_OR_RETURN(NaturalGmm speaker, MapUpdate(gmm, stats, MapOptions(), /*set=*/k));
#ifndef GMMSCORE_KERNELS_TRAIN_MAP_UPDATE_H_
#define GMMSCORE_KERNELS_TRAIN_MAP_UPDATE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/natural_gmm.h"

namespace gmmscore {

struct MapOptions {
  double mean_tau = 10.0;
  double variance_tau = 50.0;
  double weight_tau = 10.0;
  uint16_t update = kGmmMeans;
  // Variances below this after adaptation are raised to it.
  double min_variance = 1e-3;
};

// Adapts every state of `gmm` to set `set` of `stats`. INVALID_ARGUMENT for
// a shape mismatch (CheckStatsShape), a negative tau, or non-finite stats.
absl::StatusOr<NaturalGmm> MapUpdate(const NaturalGmm& gmm, const GmmStats& stats,
                                     const MapOptions& options, int set = 0);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_MAP_UPDATE_H_
