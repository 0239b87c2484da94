#include "kernels/hmm/sparse_hmm_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// logsumexp over the arcs into state j of prev[source] + weight.
inline double IncomingLogSum(const HmmGraph& g, const double* prev, int32_t j) {
  const int32_t begin = g.arc_begin[j], end = g.arc_begin[j + 1];
  double top = kNegInf;
  for (int32_t a = begin; a < end; ++a) top = std::max(top, prev[g.arc_source[a]] + g.arc_log_weight[a]);
  if (top == kNegInf) return kNegInf;
  double sum = 0.0;
  for (int32_t a = begin; a < end; ++a) sum += std::exp(prev[g.arc_source[a]] + g.arc_log_weight[a] - top);
  return top + std::log(sum);
}

absl::StatusOr<ViterbiPath> ViterbiOne(const HmmGraph& g, ConstMatrixView b) {
  GMM_RETURN_IF_ERROR(ValidateGraphEmissions(g, b));
  const int32_t n = g.num_states();
  const int64_t frames = b.rows;
  for (int32_t j = 0; j < n; ++j) {
    if (g.arc_begin[j + 1] - g.arc_begin[j] > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("state ", j, " has more than 65535 incoming arcs"));
    }
  }
  std::vector<double> prev = InitialLogWeights(g), cur(n);
  for (int32_t j = 0; j < n; ++j) prev[j] += b.at(0, g.emission[j]);
  std::vector<uint16_t> back(frames * n, 0);
  for (int64_t t = 1; t < frames; ++t) {
    const float* row = b.row(t);
    uint16_t* bp = &back[t * n];
    for (int32_t j = 0; j < n; ++j) {
      const int32_t begin = g.arc_begin[j], end = g.arc_begin[j + 1];
      double best = kNegInf;
      int32_t arg = 0;
      for (int32_t a = begin; a < end; ++a) {
        const double v = prev[g.arc_source[a]] + g.arc_log_weight[a];
        if (v > best) best = v, arg = a - begin;
      }
      cur[j] = best + row[g.emission[j]];
      bp[j] = static_cast<uint16_t>(arg);
    }
    std::swap(prev, cur);
  }
  double best = kNegInf;
  int32_t state = -1;
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    const double v = prev[g.final_states[k]] + g.final_log_weight[k];
    if (v > best) best = v, state = g.final_states[k];
  }
  if (state < 0) return NoGraphPathError(g, frames);
  ViterbiPath path;
  path.log_likelihood = best;
  path.states.resize(frames);
  for (int64_t t = frames - 1; t >= 0; --t) {
    path.states[t] = state;
    if (t > 0) state = g.arc_source[g.arc_begin[state] + back[t * n + state]];
  }
  return path;
}

absl::StatusOr<GraphPosteriors> ForwardBackwardOne(const HmmGraph& g, ConstMatrixView b, bool want_gamma) {
  GMM_RETURN_IF_ERROR(ValidateGraphEmissions(g, b));
  const int32_t n = g.num_states();
  const int64_t frames = b.rows;
  std::vector<double> alpha(frames * n);
  const std::vector<double> pi = InitialLogWeights(g);
  for (int32_t j = 0; j < n; ++j) alpha[j] = pi[j] + b.at(0, g.emission[j]);
  for (int64_t t = 1; t < frames; ++t) {
    const double* prev = &alpha[(t - 1) * n];
    const float* row = b.row(t);
    for (int32_t j = 0; j < n; ++j) alpha[t * n + j] = IncomingLogSum(g, prev, j) + row[g.emission[j]];
  }
  double total = kNegInf, top = kNegInf;
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    top = std::max(top, alpha[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k]);
  }
  if (top == kNegInf) return NoGraphPathError(g, frames);
  double sum = 0.0;
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    sum += std::exp(alpha[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k] - top);
  }
  total = top + std::log(sum);

  GraphPosteriors out;
  out.log_likelihood = total;
  out.arc_counts.assign(g.num_arcs(), 0.0);
  if (want_gamma) out.gamma.resize(frames * n);
  std::vector<double> beta = FinalLogWeights(g), into(n), earlier(n);
  for (int64_t t = frames - 1; t >= 0; --t) {
    const double* a_t = &alpha[t * n];
    if (want_gamma) {
      for (int32_t j = 0; j < n; ++j) out.gamma[t * n + j] = std::exp(a_t[j] + beta[j] - total);
    }
    if (t == 0) break;
    // into[j] = b_t(j) + beta_t(j): what an arc into j at frame t adds.
    const float* row = b.row(t);
    for (int32_t j = 0; j < n; ++j) into[j] = row[g.emission[j]] + beta[j];
    const double* a_prev = &alpha[(t - 1) * n];
    std::fill(earlier.begin(), earlier.end(), kNegInf);
    for (int32_t j = 0; j < n; ++j) {
      if (into[j] == kNegInf) continue;
      for (int32_t a = g.arc_begin[j]; a < g.arc_begin[j + 1]; ++a) {
        const int32_t i = g.arc_source[a];
        const double v = g.arc_log_weight[a] + into[j];
        out.arc_counts[a] += std::exp(a_prev[i] + v - total);
        // log-add into beta_{t-1}(i)
        double& e = earlier[i];
        e = e >= v ? e + std::log1p(std::exp(v - e)) : (e == kNegInf ? v : v + std::log1p(std::exp(e - v)));
      }
    }
    std::swap(beta, earlier);
  }
  for (size_t k = 0; k < g.final_states.size(); ++k) {
    out.final_counts.push_back(std::exp(alpha[(frames - 1) * n + g.final_states[k]] + g.final_log_weight[k] - total));
  }
  return out;
}

template <typename Result, typename Fn>
std::vector<absl::StatusOr<Result>> PerUtterance(absl::Span<const HmmGraph* const> graphs,
                                                 absl::Span<const ConstMatrixView> emissions, ThreadPool* pool,
                                                 Fn one) {
  std::vector<absl::StatusOr<Result>> out(graphs.size(), absl::InternalError("not run"));
  if (graphs.size() != emissions.size()) {
    for (auto& r : out) {
      r = absl::InvalidArgumentError(absl::StrCat(graphs.size(), " graphs but ", emissions.size(), " emissions"));
    }
    return out;
  }
  const auto run = [&](int64_t u) { out[u] = one(*graphs[u], emissions[u]); };
  if (pool != nullptr) {
    pool->ParallelFor(static_cast<int64_t>(graphs.size()), run);
  } else {
    for (size_t u = 0; u < graphs.size(); ++u) run(static_cast<int64_t>(u));
  }
  return out;
}

}  // namespace

std::vector<absl::StatusOr<ViterbiPath>> GraphViterbiCpu(absl::Span<const HmmGraph* const> graphs,
                                                         absl::Span<const ConstMatrixView> emissions,
                                                         ThreadPool* pool) {
  return PerUtterance<ViterbiPath>(graphs, emissions, pool, ViterbiOne);
}

std::vector<absl::StatusOr<GraphPosteriors>> GraphForwardBackwardCpu(absl::Span<const HmmGraph* const> graphs,
                                                                     absl::Span<const ConstMatrixView> emissions,
                                                                     bool want_gamma, ThreadPool* pool) {
  return PerUtterance<GraphPosteriors>(graphs, emissions, pool, [want_gamma](const HmmGraph& g, ConstMatrixView b) {
    return ForwardBackwardOne(g, b, want_gamma);
  });
}

}  // namespace gmmscore
