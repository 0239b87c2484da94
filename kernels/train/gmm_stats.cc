#include "kernels/train/gmm_stats.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gmmscore {
namespace {

std::string ShapeText(const GmmStats& stats) {
  return absl::StrCat("dimension ", stats.dim, ", ", stats.num_states(), " states, ",
                      stats.num_gaussians(), " Gaussians, ", stats.num_sets, " sets");
}

}  // namespace

GmmStats GmmStats::ForShape(int dim, std::vector<int64_t> state_offsets, int num_sets) {
  GmmStats stats;
  stats.dim = dim;
  stats.state_offsets = std::move(state_offsets);
  stats.num_sets = num_sets;
  const int64_t rows = stats.num_rows();
  stats.occupancy.assign(rows, 0.0);
  stats.mean_acc.assign(rows * dim, 0.0);
  stats.var_acc.assign(rows * dim, 0.0);
  return stats;
}

GmmStats GmmStats::ForModel(const DiagGmmModel& model, int num_sets) {
  const absl::Span<const int64_t> offsets = model.state_offsets();
  return ForShape(model.dim(), std::vector<int64_t>(offsets.begin(), offsets.end()), num_sets);
}

absl::Status GmmStats::Add(const GmmStats& other) {
  if (dim != other.dim || num_sets != other.num_sets || state_offsets != other.state_offsets ||
      occupancy.size() != other.occupancy.size() || mean_acc.size() != other.mean_acc.size() ||
      var_acc.size() != other.var_acc.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot add statistics of ", ShapeText(other),
                                                   " to statistics of ", ShapeText(*this)));
  }
  for (size_t i = 0; i < occupancy.size(); ++i) occupancy[i] += other.occupancy[i];
  for (size_t i = 0; i < mean_acc.size(); ++i) mean_acc[i] += other.mean_acc[i];
  for (size_t i = 0; i < var_acc.size(); ++i) var_acc[i] += other.var_acc[i];
  total_loglike += other.total_loglike;
  total_weight += other.total_weight;
  flags |= other.flags;
  return absl::OkStatus();
}

double GmmStats::StateOccupancy(int set, int state) const {
  double sum = 0.0;
  const int64_t base = set * num_gaussians();
  for (int64_t g = state_offsets[state]; g < state_offsets[state + 1]; ++g) {
    sum += occupancy[base + g];
  }
  return sum;
}

void AddStatsRow(double occ, const double* s1, const double* s2, int64_t row, GmmStats* stats) {
  const int dim = stats->dim;
  stats->occupancy[row] += occ;
  double* mean = &stats->mean_acc[row * dim];
  double* var = &stats->var_acc[row * dim];
  for (int d = 0; d < dim; ++d) {
    mean[d] += s1[d];
    var[d] += s2[d];
  }
}

}  // namespace gmmscore
