#include "kernels/score/reference_scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gmmscore {

std::vector<double> ReferenceLogLikelihoods(const DiagGmmModel& model, ConstMatrixView features) {
  const int dim = model.dim();
  const int num_states = model.num_states();
  const auto offsets = model.state_offsets();
  const auto center = model.center();
  std::vector<double> out(features.rows * num_states);
  std::vector<double> y(dim), y2(dim), terms;
  for (int64_t t = 0; t < features.rows; ++t) {
    for (int d = 0; d < dim; ++d) {
      y[d] = static_cast<double>(features.at(t, d)) - center[d];
      y2[d] = y[d] * y[d];
    }
    for (int s = 0; s < num_states; ++s) {
      terms.clear();
      for (int64_t g = offsets[s]; g < offsets[s + 1]; ++g) {
        const float* u = model.means_invvars(g);
        const float* v = model.half_neg_inv_vars(g);
        double acc = model.gconst(g);
        for (int d = 0; d < dim; ++d) acc += u[d] * y[d] + v[d] * y2[d];
        terms.push_back(acc);
      }
      const double max = *std::max_element(terms.begin(), terms.end());
      double sum = 0.0;
      for (double term : terms) sum += std::exp(term - max);
      out[t * num_states + s] = max + std::log(sum);
    }
  }
  return out;
}

double MaxAbsError(const FloatMatrix& scores, const std::vector<double>& reference) {
  double worst = 0.0;
  const float* data = scores.data();
  for (size_t i = 0; i < reference.size(); ++i) {
    const double err = std::abs(static_cast<double>(data[i]) - reference[i]);
    // A NaN must never pass as a small error.
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return worst;
}

double MaxAbsErrorWithin(const FloatMatrix& scores, const std::vector<double>& reference,
                         double magnitude) {
  double worst = 0.0;
  const float* data = scores.data();
  for (size_t i = 0; i < reference.size(); ++i) {
    if (std::abs(reference[i]) > magnitude) continue;
    const double err = std::abs(static_cast<double>(data[i]) - reference[i]);
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return worst;
}

double MaxNormalizedError(const FloatMatrix& scores, const std::vector<double>& reference) {
  double worst = 0.0;
  const float* data = scores.data();
  for (size_t i = 0; i < reference.size(); ++i) {
    const double scale = std::max(1.0, std::abs(reference[i]) / kAbsoluteErrorRange);
    const double err = std::abs(static_cast<double>(data[i]) - reference[i]) / scale;
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return worst;
}

}  // namespace gmmscore
