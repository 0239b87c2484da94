#include "kernels/train/mle_update.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

void Warn(MleReport* report, const std::string& text) {
  if (static_cast<int>(report->warnings.size()) < MleReport::kMaxWarnings) {
    report->warnings.push_back(text);
  }
}

absl::Status CheckOptions(const MleOptions& options, int dim) {
  if (options.min_gaussian_weight < 0 || options.min_gaussian_occupancy < 0 ||
      !(options.min_variance > 0)) {
    return absl::InvalidArgumentError(
        "min Gaussian weight and occupancy must be >= 0 and the min variance > 0");
  }
  if (!options.variance_floor.empty()) {
    if (static_cast<int>(options.variance_floor.size()) != dim) {
      return absl::InvalidArgumentError(absl::StrCat("the variance floor has ",
                                                     options.variance_floor.size(),
                                                     " values, the model dimension is ", dim));
    }
    for (double v : options.variance_floor) {
      if (!(v > 0) || !std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat("variance floor value ", v, " is not > 0"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(const GmmStats& stats, int64_t row0, int64_t rows) {
  const int dim = stats.dim;
  for (int64_t r = row0; r < row0 + rows; ++r) {
    bool ok = std::isfinite(stats.occupancy[r]);
    for (int d = 0; d < dim && ok; ++d) {
      ok = std::isfinite(stats.mean_acc[r * dim + d]) && std::isfinite(stats.var_acc[r * dim + d]);
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("statistics row ", r, " is not finite"));
  }
  return absl::OkStatus();
}

// Updates mean and variance of Gaussian g of `state` from its sums
// (Kaldi's order: mean first, variance around the new mean).
void UpdateMoments(const MleOptions& options, double occ, const double* sum_x, const double* sum_x2,
                   int dim, int g, NaturalState& state, MleReport* report) {
  double* mean = &state.means[static_cast<int64_t>(g) * dim];
  double* var = &state.variances[static_cast<int64_t>(g) * dim];
  for (int d = 0; d < dim; ++d) {
    const double new_mean = sum_x[d] / occ;
    if (options.update & kGmmVariances) {
      double v = sum_x2[d] / occ - new_mean * new_mean;
      if (!(options.update & kGmmMeans)) {
        const double shift = mean[d] - new_mean;
        v += shift * shift;  // variance around the old mean
      }
      const double floor = options.variance_floor.empty() ? options.min_variance
                                                          : options.variance_floor[d];
      if (!(v >= floor)) {  // also catches NaN from 0/0 cancellation
        v = floor;
        ++report->floored_variances;
      }
      var[d] = v;
    }
    if (options.update & kGmmMeans) mean[d] = new_mean;
  }
}

// The update of one state; Gaussians with too little data are removed here.
void UpdateState(const MleOptions& options, const GmmStats& stats, int64_t row0, int s,
                 NaturalState& state, MleReport* report) {
  const int dim = stats.dim;
  const int num = state.num_gaussians();
  double state_occ = 0.0;
  for (int g = 0; g < num; ++g) state_occ += stats.occupancy[row0 + g];
  report->occupancy += state_occ;
  if (state_occ <= 0.0) {
    ++report->empty_states;
    Warn(report, absl::StrCat("state ", s, " has no data: left unchanged"));
    return;
  }
  std::vector<int> remove;
  std::vector<double> weights = state.weights;
  for (int g = 0; g < num; ++g) {
    const double occ = stats.occupancy[row0 + g];
    const double prob = occ / state_occ;
    if (occ > options.min_gaussian_occupancy && prob > options.min_gaussian_weight) {
      weights[g] = prob;
      UpdateMoments(options, occ, &stats.mean_acc[(row0 + g) * dim], &stats.var_acc[(row0 + g) * dim],
                    dim, g, state, report);
    } else if (options.remove_low_count_gaussians && static_cast<int>(remove.size()) < num - 1) {
      Warn(report,
           absl::StrFormat("state %d Gaussian %d: too little data (occupancy %.3g, weight %.3g): removed",
                           s, g, occ, prob));
      remove.push_back(g);
    } else {
      Warn(report,
           absl::StrFormat("state %d Gaussian %d: too little data (occupancy %.3g, weight %.3g): kept "
                           "unchanged (%s)",
                           s, g, occ, prob,
                           options.remove_low_count_gaussians ? "the state's last Gaussian"
                                                              : "removal off"));
      ++report->low_count_gaussians;
      weights[g] = std::max(prob, options.min_gaussian_weight);
    }
  }
  if (options.update & kGmmWeights) state.weights = weights;
  report->removed_gaussians += static_cast<int64_t>(remove.size());
  for (auto it = remove.rbegin(); it != remove.rend(); ++it) {
    const int g = *it;
    state.weights.erase(state.weights.begin() + g);
    state.means.erase(state.means.begin() + g * dim, state.means.begin() + (g + 1) * dim);
    state.variances.erase(state.variances.begin() + g * dim, state.variances.begin() + (g + 1) * dim);
  }
}

}  // namespace

absl::Status CheckStatsShape(const NaturalGmm& gmm, const GmmStats& stats, int set) {
  bool same = stats.dim == gmm.dim && stats.num_states() == gmm.num_states() && set >= 0 &&
              set < stats.num_sets;
  for (int s = 0; same && s < gmm.num_states(); ++s) {
    same = stats.state_offsets[s + 1] - stats.state_offsets[s] == gmm.states[s].num_gaussians();
  }
  if (same) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the statistics (dimension ", stats.dim, ", ", stats.num_states(), " states, ",
      stats.num_gaussians(), " Gaussians, ", stats.num_sets, " sets) do not fit the model (dimension ",
      gmm.dim, ", ", gmm.num_states(), " states, ", gmm.num_gaussians(), " Gaussians)"));
}

absl::StatusOr<NaturalGmm> MleUpdate(const NaturalGmm& gmm, const GmmStats& stats,
                                     const MleOptions& options, MleReport* report, int set) {
  GMM_RETURN_IF_ERROR(CheckStatsShape(gmm, stats, set));
  GMM_RETURN_IF_ERROR(CheckOptions(options, gmm.dim));
  const int64_t base = set * stats.num_gaussians();
  GMM_RETURN_IF_ERROR(CheckFinite(stats, base, stats.num_gaussians()));
  *report = MleReport();
  NaturalGmm next = gmm;
  for (int s = 0; s < next.num_states(); ++s) {
    UpdateState(options, stats, base + stats.state_offsets[s], s, next.states[s], report);
  }
  const int64_t warned = report->removed_gaussians + report->low_count_gaussians + report->empty_states;
  if (warned > MleReport::kMaxWarnings) {
    report->warnings.push_back(absl::StrCat("... and ", warned - MleReport::kMaxWarnings,
                                            " more Gaussians or states with too little data"));
  }
  return next;
}

absl::StatusOr<uint16_t> ParseUpdateFlags(const std::string& letters) {
  uint16_t flags = 0;
  for (char c : letters) {
    switch (c) {
      case 'm': flags |= kGmmMeans; break;
      case 'v': flags |= kGmmVariances; break;
      case 'w': flags |= kGmmWeights; break;
      case 't': flags |= kGmmTransitions; break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("update flags '", letters, "': letters are m, v, w and t"));
    }
  }
  if (flags == 0) return absl::InvalidArgumentError("no update flags given (use letters m, v, w)");
  return flags;
}

}  // namespace gmmscore
