// GmmStats: the sufficient statistics of a DiagGmmModel's Gaussians, in
// float64, as Kaldi's AccumDiagGmm holds them for one mixture (a UBM) and
// AccumAmDiagGmm for an acoustic model (one AccumDiagGmm per pdf).
//
//   GmmStats stats = GmmStats::ForModel(model);            // zeros
//   GMM_RETURN_IF_ERROR(backend.Accumulate(block, pairs, &stats));
//   GMM_RETURN_IF_ERROR(total.Add(stats));                // sums of parallel jobs
//
// For every Gaussian g of every set (a set is one speaker in MAP; there is
// one set otherwise) and frames x_t with Gaussian posteriors gamma_tg:
//   occupancy[g]        = sum_t gamma_tg
//   mean_acc[g][d]      = sum_t gamma_tg x_td         (raw, not centred)
//   var_acc[g][d]       = sum_t gamma_tg x_td^2
// plus total_loglike = sum_t w_t log p(x_t) and total_weight = sum_t w_t,
// where w_t is the weight a frame (or a frame-state pair) carries.
// Rows are laid out as the model's: Gaussian g of state s of set k is row
// k * num_gaussians + state_offsets[s] + j.
//
// Thread safety: a plain value; not synchronised.
#ifndef GMMSCORE_KERNELS_TRAIN_GMM_STATS_H_
#define GMMSCORE_KERNELS_TRAIN_GMM_STATS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// Kaldi's GmmFlagsType bits: which parameters the statistics can update.
enum GmmUpdateFlags : uint16_t {
  kGmmMeans = 0x1,
  kGmmVariances = 0x2,
  kGmmWeights = 0x4,
  kGmmTransitions = 0x8,
  kGmmAll = 0xF,
};

struct GmmStats {
  int dim = 0;
  // As DiagGmmModel::state_offsets(): S + 1 entries, Gaussians of state s are
  // [state_offsets[s], state_offsets[s+1]) within each set.
  std::vector<int64_t> state_offsets{0};
  int num_sets = 1;
  // What the statistics were gathered for (Kaldi's <FLAGS>); what is written.
  uint16_t flags = kGmmMeans | kGmmVariances | kGmmWeights;
  std::vector<double> occupancy;  // num_sets * num_gaussians()
  std::vector<double> mean_acc;   // (num_sets * num_gaussians()) x dim
  std::vector<double> var_acc;    // (num_sets * num_gaussians()) x dim
  double total_loglike = 0.0;
  double total_weight = 0.0;

  // Zero statistics shaped for `model`, with `num_sets` sets.
  static GmmStats ForModel(const DiagGmmModel& model, int num_sets = 1);
  // Zero statistics for `num_states` states of the given Gaussian counts.
  static GmmStats ForShape(int dim, std::vector<int64_t> state_offsets, int num_sets = 1);

  int num_states() const { return static_cast<int>(state_offsets.size()) - 1; }
  int64_t num_gaussians() const { return state_offsets.back(); }
  int64_t num_rows() const { return num_sets * num_gaussians(); }

  // Adds `other` element by element. INVALID_ARGUMENT (naming both shapes)
  // when dimension, state sizes or set counts differ; stats stays unchanged.
  absl::Status Add(const GmmStats& other);
  // Sum of occupancy over the Gaussians of state s in set k.
  double StateOccupancy(int set, int state) const;
};

// Adds one Gaussian's sums (occ = sum gamma, s1 = sum gamma x, s2 = sum
// gamma x^2, D values each, on raw features) to row `row` of *stats.
void AddStatsRow(double occ, const double* s1, const double* s2, int64_t row, GmmStats* stats);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_GMM_STATS_H_
