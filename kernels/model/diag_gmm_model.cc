#include "kernels/model/diag_gmm_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

constexpr double kLog2Pi = 1.8378770664093454835606594728112;  // log(2 pi)

absl::Status GaussianError(int state, int64_t gaussian_in_state, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("state ", state, ", Gaussian ", gaussian_in_state, ": ", what));
}

// Checks one state's weights sum to 1 within the tolerance.
absl::Status CheckWeightSum(int state, double sum) {
  if (std::abs(sum - 1.0) > DiagGmmModel::kWeightSumTolerance) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "state %d: mixture weights sum to %.6f, not 1 (tolerance %g)", state, sum,
        DiagGmmModel::kWeightSumTolerance));
  }
  return absl::OkStatus();
}

// log w of a scoring-form row: K + D/2 log 2pi + 1/2 sum log var + 1/2 sum mu'^2/var,
// with var = -1/(2v) and mu' = u var.
double LogWeightOfRow(const float* row, int dim) {
  double log_weight = row[0] + 0.5 * dim * kLog2Pi;
  for (int d = 0; d < dim; ++d) {
    const double u = row[1 + d];
    const double var = -1.0 / (2.0 * row[1 + dim + d]);
    const double mean = u * var;
    log_weight += 0.5 * std::log(var) + 0.5 * mean * mean / var;
  }
  return log_weight;
}

}  // namespace

DiagGmmModel::DiagGmmModel(int dim, std::vector<int64_t> state_offsets, std::vector<float> center,
                           std::vector<float> params)
    : dim_(dim),
      state_offsets_(std::move(state_offsets)),
      center_(std::move(center)),
      params_(std::move(params)) {
  for (int s = 0; s < num_states(); ++s) {
    max_gaussians_per_state_ = std::max(max_gaussians_per_state_, num_gaussians_in_state(s));
  }
}

absl::StatusOr<DiagGmmModel> DiagGmmModel::FromScoringForm(int dim,
                                                           std::vector<int64_t> state_offsets,
                                                           std::vector<float> center,
                                                           std::vector<float> params) {
  if (dim <= 0) return absl::InvalidArgumentError(absl::StrCat("dimension ", dim, " is not positive"));
  if (state_offsets.size() < 2 || state_offsets.front() != 0) {
    return absl::InvalidArgumentError("model has no states or its state offsets do not start at 0");
  }
  const int num_states = static_cast<int>(state_offsets.size()) - 1;
  for (int s = 0; s < num_states; ++s) {
    if (state_offsets[s + 1] <= state_offsets[s]) {
      return absl::InvalidArgumentError(absl::StrCat("state ", s, " has no Gaussians"));
    }
  }
  const int64_t total = state_offsets.back();
  const int64_t cols = 1 + 2 * static_cast<int64_t>(dim);
  if (static_cast<int64_t>(params.size()) != total * cols) {
    return absl::InvalidArgumentError(absl::StrCat("parameter matrix has ", params.size(),
                                                   " values, expected ", total, " x ", cols));
  }
  if (static_cast<int>(center.size()) != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("centre has ", center.size(), " values, expected ", dim));
  }
  for (int d = 0; d < dim; ++d) {
    if (!std::isfinite(center[d])) {
      return absl::InvalidArgumentError(absl::StrCat("centre value ", d, " is not finite"));
    }
  }
  for (int s = 0; s < num_states; ++s) {
    double weight_sum = 0.0;
    for (int64_t g = state_offsets[s]; g < state_offsets[s + 1]; ++g) {
      const float* row = &params[g * cols];
      const int64_t local = g - state_offsets[s];
      for (int64_t c = 0; c < cols; ++c) {
        if (!std::isfinite(row[c])) return GaussianError(s, local, "parameter is not finite");
      }
      for (int d = 0; d < dim; ++d) {
        if (!(row[1 + dim + d] < 0.0f)) {
          return GaussianError(s, local,
                               absl::StrCat("variance of dimension ", d, " is not positive"));
        }
      }
      const double log_weight = LogWeightOfRow(row, dim);
      if (!(log_weight <= 1e-3) || !std::isfinite(log_weight)) {
        return GaussianError(s, local, absl::StrCat("implied log weight ", log_weight, " is not a log probability"));
      }
      weight_sum += std::exp(log_weight);
    }
    if (absl::Status status = CheckWeightSum(s, weight_sum); !status.ok()) return status;
  }
  return DiagGmmModel(dim, std::move(state_offsets), std::move(center), std::move(params));
}

NaturalGaussian DiagGmmModel::Natural(int64_t g) const {
  const float* row = &params_[g * param_cols()];
  NaturalGaussian out;
  out.weight = std::exp(LogWeightOfRow(row, dim_));
  out.mean.resize(dim_);
  out.variance.resize(dim_);
  for (int d = 0; d < dim_; ++d) {
    const double var = -1.0 / (2.0 * row[1 + dim_ + d]);
    out.variance[d] = var;
    out.mean[d] = row[1 + d] * var + center_[d];
  }
  return out;
}

int64_t DiagGmmModel::ByteSize() const {
  return static_cast<int64_t>(params_.size() * sizeof(float) +
                              state_offsets_.size() * sizeof(int64_t) +
                              center_.size() * sizeof(float));
}

DiagGmmModelBuilder::DiagGmmModelBuilder(int dim) : dim_(dim) {}

absl::Status DiagGmmModelBuilder::AddState(absl::Span<const double> weights,
                                           absl::Span<const double> means,
                                           absl::Span<const double> variances) {
  const int state = num_states();
  const size_t count = weights.size();
  if (dim_ <= 0) return absl::InvalidArgumentError(absl::StrCat("dimension ", dim_, " is not positive"));
  if (count == 0) return absl::InvalidArgumentError(absl::StrCat("state ", state, " has no Gaussians"));
  if (means.size() != count * dim_ || variances.size() != count * dim_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "state %d: %d weights need %d means and variances, got %d and %d", state, count,
        count * dim_, means.size(), variances.size()));
  }
  double weight_sum = 0.0;
  for (size_t g = 0; g < count; ++g) {
    if (!std::isfinite(weights[g]) || !(weights[g] > 0.0)) {
      return GaussianError(state, g, absl::StrCat("weight ", weights[g], " is not positive"));
    }
    weight_sum += weights[g];
    for (int d = 0; d < dim_; ++d) {
      const double mean = means[g * dim_ + d];
      const double var = variances[g * dim_ + d];
      if (!std::isfinite(mean)) {
        return GaussianError(state, g, absl::StrCat("mean of dimension ", d, " is not finite"));
      }
      if (!std::isfinite(var) || !(var > 0.0)) {
        return GaussianError(state, g,
                             absl::StrCat("variance of dimension ", d, " is ", var, ", not positive"));
      }
      if (!std::isfinite(1.0 / var) || !std::isfinite(static_cast<float>(1.0 / var))) {
        return GaussianError(state, g, absl::StrCat("variance of dimension ", d, " is too small"));
      }
    }
  }
  if (absl::Status status = CheckWeightSum(state, weight_sum); !status.ok()) return status;
  for (size_t g = 0; g < count; ++g) log_weights_.push_back(std::log(weights[g]));
  means_.insert(means_.end(), means.begin(), means.end());
  variances_.insert(variances_.end(), variances.begin(), variances.end());
  offsets_.push_back(offsets_.back() + static_cast<int64_t>(count));
  return absl::OkStatus();
}

absl::StatusOr<DiagGmmModel> DiagGmmModelBuilder::Build() && {
  if (num_states() == 0) return absl::InvalidArgumentError("model has no states");
  const int64_t total = offsets_.back();
  std::vector<double> center_sum(dim_, 0.0);
  for (int64_t g = 0; g < total; ++g) {
    for (int d = 0; d < dim_; ++d) center_sum[d] += means_[g * dim_ + d];
  }
  std::vector<float> center(dim_);
  for (int d = 0; d < dim_; ++d) center[d] = static_cast<float>(center_sum[d] / total);

  const int64_t cols = 1 + 2 * static_cast<int64_t>(dim_);
  std::vector<float> params(total * cols);
  for (int64_t g = 0; g < total; ++g) {
    float* row = &params[g * cols];
    double gconst = log_weights_[g] - 0.5 * dim_ * kLog2Pi;
    for (int d = 0; d < dim_; ++d) {
      const double var = variances_[g * dim_ + d];
      const double mean = static_cast<double>(means_[g * dim_ + d]) - center[d];
      gconst -= 0.5 * (std::log(var) + mean * mean / var);
      row[1 + d] = static_cast<float>(mean / var);
      row[1 + dim_ + d] = static_cast<float>(-0.5 / var);
    }
    if (!std::isfinite(gconst)) {
      return absl::InvalidArgumentError(absl::StrCat("Gaussian ", g, ": constant is not finite"));
    }
    row[0] = static_cast<float>(gconst);
  }
  return DiagGmmModel(dim_, std::move(offsets_), std::move(center), std::move(params));
}

}  // namespace gmmscore
