#include "kernels/hmm/sparse_hmm_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogAdd(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == kNegInf) return a;
  return a + std::log1p(std::exp(b - a));
}

// alpha, T x N, by the forward recursion.
std::vector<double> Forward(const HmmGraph& g, ConstMatrixView b) {
  const int32_t n = g.num_states();
  const std::vector<double> pi = InitialLogWeights(g);
  std::vector<double> alpha(b.rows * n, kNegInf);
  for (int32_t j = 0; j < n; ++j) alpha[j] = pi[j] + b.at(0, g.emission[j]);
  for (int64_t t = 1; t < b.rows; ++t) {
    const double* prev = &alpha[(t - 1) * n];
    for (int32_t j = 0; j < n; ++j) {
      double sum = kNegInf;
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        sum = LogAdd(sum, prev[g.arc_source[a]] + g.arc_log_weight[a]);
      }
      alpha[t * n + j] = sum + b.at(t, g.emission[j]);
    }
  }
  return alpha;
}

std::vector<double> Backward(const HmmGraph& g, ConstMatrixView b) {
  const int32_t n = g.num_states();
  const int64_t frames = b.rows;
  std::vector<double> beta(frames * n, kNegInf);
  const std::vector<double> phi = FinalLogWeights(g);
  std::copy(phi.begin(), phi.end(), beta.begin() + (frames - 1) * n);
  for (int64_t t = frames - 2; t >= 0; --t) {
    const double* next = &beta[(t + 1) * n];
    double* row = &beta[t * n];
    for (int32_t j = 0; j < n; ++j) {
      const double into = b.at(t + 1, g.emission[j]) + next[j];
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        const int32_t i = g.arc_source[a];
        row[i] = LogAdd(row[i], g.arc_log_weight[a] + into);
      }
    }
  }
  return beta;
}

}  // namespace

absl::Status ValidateGraphEmissions(const HmmGraph& graph, ConstMatrixView emissions) {
  GMM_RETURN_IF_ERROR(ValidateHmmGraph(graph));
  if (emissions.rows < 1) return absl::InvalidArgumentError("no frames");
  if (emissions.cols != static_cast<int64_t>(graph.columns.size())) {
    return absl::InvalidArgumentError(absl::StrCat("the graph scores ", graph.columns.size(),
                                                   " model states, the emissions have ", emissions.cols, " columns"));
  }
  for (int64_t t = 0; t < emissions.rows; ++t) {
    for (int64_t c = 0; c < emissions.cols; ++c) {
      const float v = emissions.at(t, c);
      if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
        return absl::InvalidArgumentError(absl::StrCat("frame ", t, ", column ", c, ": log-likelihood ", v));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphPosteriors> GraphForwardBackwardReference(const HmmGraph& g, ConstMatrixView b) {
  GMM_RETURN_IF_ERROR(ValidateGraphEmissions(g, b));
  const int32_t n = g.num_states();
  const int64_t frames = b.rows;
  const std::vector<double> alpha = Forward(g, b);
  double total = kNegInf;
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    total = LogAdd(total, alpha[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k]);
  }
  if (!std::isfinite(total)) return NoGraphPathError(g, frames);
  const std::vector<double> beta = Backward(g, b);
  GraphPosteriors out;
  out.log_likelihood = total;
  out.gamma.resize(frames * n);
  for (int64_t i = 0; i < frames * n; ++i) out.gamma[i] = std::exp(alpha[i] + beta[i] - total);
  out.arc_counts.assign(g.num_arcs(), 0.0);
  for (int64_t t = 0; t + 1 < frames; ++t) {
    for (int32_t j = 0; j < n; ++j) {
      const double into = b.at(t + 1, g.emission[j]) + beta[(t + 1) * n + j] - total;
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        out.arc_counts[a] += std::exp(alpha[t * n + g.arc_source[a]] + g.arc_log_weight[a] + into);
      }
    }
  }
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    out.final_counts.push_back(std::exp(alpha[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k] - total));
  }
  return out;
}

absl::StatusOr<ViterbiPath> GraphViterbiReference(const HmmGraph& g, ConstMatrixView b) {
  GMM_RETURN_IF_ERROR(ValidateGraphEmissions(g, b));
  const int32_t n = g.num_states();
  const int64_t frames = b.rows;
  const std::vector<double> pi = InitialLogWeights(g);
  std::vector<double> delta(frames * n, kNegInf);
  std::vector<int32_t> back(frames * n, -1);
  for (int32_t j = 0; j < n; ++j) delta[j] = pi[j] + b.at(0, g.emission[j]);
  for (int64_t t = 1; t < frames; ++t) {
    for (int32_t j = 0; j < n; ++j) {
      double best = kNegInf;
      int32_t from = -1;
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        const double v = delta[(t - 1) * n + g.arc_source[a]] + g.arc_log_weight[a];
        if (v > best) {
          best = v;
          from = g.arc_source[a];
        }
      }
      delta[t * n + j] = best + b.at(t, g.emission[j]);
      back[t * n + j] = from;
    }
  }
  double best = kNegInf;
  int32_t last = -1;
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    const double v = delta[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k];
    if (v > best) {
      best = v;
      last = g.final_states[k];
    }
  }
  if (last < 0) return NoGraphPathError(g, frames);
  ViterbiPath path;
  path.log_likelihood = best;
  path.states.resize(frames);
  for (int64_t t = frames - 1; t >= 0; --t) {
    path.states[t] = last;
    last = back[t * n + last];
  }
  return path;
}

}  // namespace gmmscore
