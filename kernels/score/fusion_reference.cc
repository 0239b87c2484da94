#include "kernels/score/fusion_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gmmscore {
namespace {

double LogSumExp(const std::vector<double>& v) {
  double max = -std::numeric_limits<double>::infinity();
  for (double x : v) max = std::max(max, x);
  if (std::isinf(max)) return max;
  double sum = 0.0;
  for (double x : v) sum += std::exp(x - max);
  return max + std::log(sum);
}

}  // namespace

FusionReference ReferenceFuse(const std::vector<std::vector<double>>& loglikes, int64_t frames,
                              int64_t states, const FusionOptions& options) {
  const int models = static_cast<int>(loglikes.size());
  std::vector<double> prior(models, 1.0 / models);
  if (!options.weights.empty()) {
    double total = 0.0;
    for (double w : options.weights) total += w;
    for (int m = 0; m < models; ++m) prior[m] = options.weights[m] / total;
  }

  // Per-frame posteriors p_m(t) (posterior method only).
  std::vector<double> posterior(frames * models, 0.0);
  if (options.method == FusionMethod::kPosterior) {
    for (int64_t t = 0; t < frames; ++t) {
      std::vector<double> log_joint(models);
      for (int m = 0; m < models; ++m) {
        std::vector<double> row(loglikes[m].begin() + t * states,
                                loglikes[m].begin() + (t + 1) * states);
        log_joint[m] = std::log(prior[m]) + options.acoustic_scale * LogSumExp(row);
      }
      const double norm = LogSumExp(log_joint);
      for (int m = 0; m < models; ++m) posterior[t * models + m] = std::exp(log_joint[m] - norm);
    }
  }

  FusionReference ref;
  ref.fused.resize(frames * states);
  ref.dominant_per_frame.resize(frames);
  if (options.method != FusionMethod::kMax) ref.weights.resize(frames * models);
  for (int64_t t = 0; t < frames; ++t) {
    std::vector<double> w(prior);
    if (options.method == FusionMethod::kPosterior) {
      const int64_t first = std::max<int64_t>(0, t - options.window_frames + 1);
      for (int m = 0; m < models; ++m) {
        double sum = 0.0;
        for (int64_t tau = first; tau <= t; ++tau) sum += posterior[tau * models + m];
        w[m] = sum / static_cast<double>(t - first + 1);
      }
    }
    if (!ref.weights.empty()) {
      for (int m = 0; m < models; ++m) ref.weights[t * models + m] = w[m];
    }
    int64_t best_state = 0;
    for (int64_t s = 0; s < states; ++s) {
      double value;
      if (options.method == FusionMethod::kMax) {
        value = loglikes[0][t * states + s];
        for (int m = 1; m < models; ++m) value = std::max(value, loglikes[m][t * states + s]);
      } else {
        std::vector<double> terms(models);
        for (int m = 0; m < models; ++m) terms[m] = std::log(w[m]) + loglikes[m][t * states + s];
        value = LogSumExp(terms);
      }
      ref.fused[t * states + s] = value;
      if (value > ref.fused[t * states + best_state]) best_state = s;
    }
    int winner = 0;
    for (int m = 1; m < models; ++m) {
      const double log_wm = options.method == FusionMethod::kMax ? 0.0 : std::log(w[m]);
      const double log_wwin = options.method == FusionMethod::kMax ? 0.0 : std::log(w[winner]);
      if (log_wm + loglikes[m][t * states + best_state] >
          log_wwin + loglikes[winner][t * states + best_state]) {
        winner = m;
      }
    }
    ref.dominant_per_frame[t] = winner;
  }
  return ref;
}

}  // namespace gmmscore
