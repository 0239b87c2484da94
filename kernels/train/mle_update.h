// The maximum-likelihood (EM M-step) update of a diagonal GMM acoustic model
// from its statistics, with the semantics of Kaldi's MleDiagGmmUpdate
// (src/gmm/mle-diag-gmm.cc), applied to every state:
//   - a Gaussian keeps its parameters (and, with removal on, is removed,
//     unless it is its state's last) when its occupancy is at most
//     min_gaussian_occupancy or its weight occ / state_occ at most
//     min_gaussian_weight; one not removed gets weight max(prob, min weight);
//   - otherwise weight = occ / state_occ, mean = sum gx / occ and variance =
//     sum gx^2 / occ - mean^2, floored elementwise at min_variance or at the
//     variance-floor vector;
//   - only the parameters in `update` change (Kaldi's flags); updating
//     variances without means uses the old means, as Kaldi does.
// One deliberate difference: a state with no occupancy at all is left as it
// was, with a warning; Kaldi would remove all but one of its Gaussians.
//
//   MleReport report;
//   GMM_ASSIGN_OR_RETURN(NaturalGmm next, MleUpdate(gmm, stats, MleOptions(), &report));
//   for (const std::string& w : report.warnings) LOG(w);
#ifndef GMMSCORE_KERNELS_TRAIN_MLE_UPDATE_H_
#define GMMSCORE_KERNELS_TRAIN_MLE_UPDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/natural_gmm.h"

namespace gmmscore {

struct MleOptions {
  double min_gaussian_weight = 1e-5;
  double min_gaussian_occupancy = 10.0;
  double min_variance = 0.001;
  std::vector<double> variance_floor;  // D values; replaces min_variance when set
  bool remove_low_count_gaussians = true;
  uint16_t update = kGmmMeans | kGmmVariances | kGmmWeights;
};

// What an update did, for the training log.
struct MleReport {
  double occupancy = 0.0;          // total over all states
  int64_t floored_variances = 0;   // elements raised to the floor
  int64_t removed_gaussians = 0;
  int64_t low_count_gaussians = 0; // kept at their old parameters
  int64_t empty_states = 0;
  // One line per case (state, Gaussian, occupancy, weight), at most
  // kMaxWarnings of them, then a line with how many more there were.
  std::vector<std::string> warnings;
  static constexpr int kMaxWarnings = 20;
};

// Updates every state of `gmm` from set `set` of `stats`. INVALID_ARGUMENT
// when the statistics' shape is not the model's, a variance floor of the
// wrong size or with a value <= 0, a negative minimum, or statistics that
// are not finite.
absl::StatusOr<NaturalGmm> MleUpdate(const NaturalGmm& gmm, const GmmStats& stats,
                                     const MleOptions& options, MleReport* report, int set = 0);

// "mvw" -> kGmmMeans|kGmmVariances|kGmmWeights (Kaldi's --update-flags
// letters m, v, w, t). INVALID_ARGUMENT for other letters or none.
absl::StatusOr<uint16_t> ParseUpdateFlags(const std::string& letters);

// INVALID_ARGUMENT unless `stats` has the dimension and state sizes of `gmm`
// and at least set + 1 sets (naming both shapes).
absl::Status CheckStatsShape(const NaturalGmm& gmm, const GmmStats& stats, int set);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_MLE_UPDATE_H_
