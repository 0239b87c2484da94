#include "kernels/hmm/hmm_graph.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

absl::Status CheckEnds(const char* what, const std::vector<int32_t>& states, const std::vector<float>& weights,
                       int32_t num_states) {
  if (states.empty()) return absl::InvalidArgumentError(absl::StrCat("the graph has no ", what, " state"));
  if (weights.size() != states.size()) {
    return absl::InvalidArgumentError(absl::StrCat(states.size(), " ", what, " states but ", weights.size(), " weights"));
  }
  std::vector<char> seen(num_states, 0);
  for (size_t k = 0; k < states.size(); ++k) {
    const int32_t s = states[k];
    if (s < 0 || s >= num_states) {
      return absl::InvalidArgumentError(absl::StrCat(what, " state ", s, " is not one of the ", num_states));
    }
    if (seen[s]++) return absl::InvalidArgumentError(absl::StrCat(what, " state ", s, " is listed twice"));
    if (!std::isfinite(weights[k])) {
      return absl::InvalidArgumentError(absl::StrCat(what, " state ", s, " has weight ", weights[k]));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckArcs(const HmmGraph& g) {
  const int32_t n = g.num_states();
  if (g.arc_begin.size() != static_cast<size_t>(n) + 1 || g.arc_begin.front() != 0 ||
      g.arc_begin.back() != static_cast<int32_t>(g.arc_source.size())) {
    return absl::InvalidArgumentError(absl::StrCat("arc_begin has ", g.arc_begin.size(), " entries for ", n,
                                                   " states and ", g.arc_source.size(), " arcs"));
  }
  if (g.arc_log_weight.size() != g.arc_source.size() || g.arc_slot.size() != g.arc_source.size()) {
    return absl::InvalidArgumentError("arc_source, arc_log_weight and arc_slot differ in length");
  }
  for (int32_t s = 0; s < n; ++s) {
    if (g.arc_begin[s + 1] < g.arc_begin[s]) return absl::InvalidArgumentError("arc_begin decreases");
    for (int32_t a = g.arc_begin[s]; a < g.arc_begin[s + 1]; ++a) {
      const int32_t from = g.arc_source[a];
      if (from < 0 || from >= n) {
        return absl::InvalidArgumentError(absl::StrCat("arc ", a, " into state ", s, " comes from state ", from,
                                                       ", not one of the ", n));
      }
      if (a > g.arc_begin[s] && from <= g.arc_source[a - 1]) {
        return absl::InvalidArgumentError(absl::StrCat("arcs into state ", s, " are not sorted by distinct source"));
      }
      if (!std::isfinite(g.arc_log_weight[a])) {
        return absl::InvalidArgumentError(absl::StrCat("arc ", a, " has weight ", g.arc_log_weight[a]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateHmmGraph(const HmmGraph& g) {
  const int32_t n = g.num_states();
  if (n == 0) return absl::InvalidArgumentError("the graph has no states");
  for (int32_t s = 0; s < n; ++s) {
    if (g.emission[s] < 0 || g.emission[s] >= static_cast<int32_t>(g.columns.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("state ", s, " emits column ", g.emission[s], " of ", g.columns.size()));
    }
  }
  std::vector<int32_t> sorted = g.columns;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError("a model state is listed twice in columns");
  }
  if (!sorted.empty() && sorted.front() < 0) return absl::InvalidArgumentError("a column names a negative model state");
  GMM_RETURN_IF_ERROR(CheckArcs(g));
  GMM_RETURN_IF_ERROR(CheckEnds("initial", g.initial_states, g.initial_log_weight, n));
  GMM_RETURN_IF_ERROR(CheckEnds("final", g.final_states, g.final_log_weight, n));
  if (g.final_slot.size() != g.final_states.size()) {
    return absl::InvalidArgumentError("final_slot and final_states differ in length");
  }
  return absl::OkStatus();
}

int32_t HmmGraph::MinFrames() const {
  // Breadth-first over arcs that leave a state (self-loops add nothing).
  const int32_t n = num_states();
  std::vector<std::vector<int32_t>> next(n);
  for (int32_t s = 0; s < n; ++s) {
    for (int32_t a = arc_begin[s]; a < arc_begin[s + 1]; ++a) {
      if (arc_source[a] != s) next[arc_source[a]].push_back(s);
    }
  }
  std::vector<int32_t> frames(n, std::numeric_limits<int32_t>::max());
  std::deque<int32_t> queue;
  for (int32_t s : initial_states) {
    frames[s] = 1;
    queue.push_back(s);
  }
  while (!queue.empty()) {
    const int32_t s = queue.front();
    queue.pop_front();
    for (int32_t t : next[s]) {
      if (frames[t] > frames[s] + 1) {
        frames[t] = frames[s] + 1;
        queue.push_back(t);
      }
    }
  }
  int32_t best = std::numeric_limits<int32_t>::max();
  for (int32_t f : final_states) best = std::min(best, frames[f]);
  return best;
}

namespace {

std::vector<double> EndWeights(int32_t n, const std::vector<int32_t>& states, const std::vector<float>& weights) {
  std::vector<double> out(n, -std::numeric_limits<double>::infinity());
  for (size_t k = 0; k < states.size(); ++k) out[states[k]] = weights[k];
  return out;
}

}  // namespace

std::vector<double> InitialLogWeights(const HmmGraph& g) {
  return EndWeights(g.num_states(), g.initial_states, g.initial_log_weight);
}

std::vector<double> FinalLogWeights(const HmmGraph& g) {
  return EndWeights(g.num_states(), g.final_states, g.final_log_weight);
}

absl::Status NoGraphPathError(const HmmGraph& graph, int64_t frames) {
  return absl::FailedPreconditionError(absl::StrCat("no path of the graph (", graph.num_states(),
                                                    " states, at least ", graph.MinFrames(),
                                                    " frames) can produce these ", frames, " frames"));
}

absl::StatusOr<HmmGraph> GraphOfDenseHmm(const DenseHmm& hmm) {
  if (hmm.num_states < 1) return absl::InvalidArgumentError("the HMM has no states");
  std::vector<int32_t> columns = hmm.emissions;
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  HmmGraphBuilder builder;
  for (int32_t e : hmm.emissions) {
    builder.AddState(static_cast<int32_t>(std::lower_bound(columns.begin(), columns.end(), e) - columns.begin()));
  }
  for (int i = 0; i < hmm.num_states; ++i) {
    if (std::isfinite(hmm.log_initial[i])) builder.AddInitial(i, static_cast<float>(hmm.log_initial[i]));
    builder.AddFinal(i, 0.0f);
    for (int j = 0; j < hmm.num_states; ++j) {
      const double w = hmm.log_transition(i, j);
      if (std::isfinite(w)) builder.AddArc(i, j, static_cast<float>(w), i * hmm.num_states + j);
    }
  }
  HmmGraph graph;
  GMM_RETURN_IF_ERROR(builder.Finish(std::move(columns), &graph));
  return graph;
}

FloatMatrix GatherColumns(ConstMatrixView scores, const std::vector<int32_t>& columns) {
  FloatMatrix out(scores.rows, static_cast<int64_t>(columns.size()));
  for (int64_t t = 0; t < scores.rows; ++t) {
    for (size_t c = 0; c < columns.size(); ++c) out.row(t)[c] = scores.at(t, columns[c]);
  }
  return out;
}

int32_t HmmGraphBuilder::AddState(int32_t column) {
  graph_.emission.push_back(column);
  return graph_.num_states() - 1;
}

void HmmGraphBuilder::AddArc(int32_t from, int32_t to, float log_weight, int32_t slot) {
  arcs_.push_back({from, to, log_weight, slot});
}

void HmmGraphBuilder::AddInitial(int32_t state, float log_weight) {
  graph_.initial_states.push_back(state);
  graph_.initial_log_weight.push_back(log_weight);
}

void HmmGraphBuilder::AddFinal(int32_t state, float log_weight, int32_t slot) {
  graph_.final_states.push_back(state);
  graph_.final_log_weight.push_back(log_weight);
  graph_.final_slot.push_back(slot);
}

absl::Status HmmGraphBuilder::Finish(std::vector<int32_t> columns, HmmGraph* out) {
  const int32_t n = graph_.num_states();
  for (const Arc& arc : arcs_) {
    if (arc.to < 0 || arc.to >= n) {
      return absl::InvalidArgumentError(absl::StrCat("an arc goes to state ", arc.to, " of ", n));
    }
  }
  std::stable_sort(arcs_.begin(), arcs_.end(),
                   [](const Arc& a, const Arc& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
  graph_.columns = std::move(columns);
  graph_.arc_begin.assign(n + 1, 0);
  for (const Arc& arc : arcs_) {
    ++graph_.arc_begin[arc.to + 1];
    graph_.arc_source.push_back(arc.from);
    graph_.arc_log_weight.push_back(arc.log_weight);
    graph_.arc_slot.push_back(arc.slot);
  }
  std::partial_sum(graph_.arc_begin.begin(), graph_.arc_begin.end(), graph_.arc_begin.begin());
  arcs_.clear();
  GMM_RETURN_IF_ERROR(ValidateHmmGraph(graph_));
  *out = std::move(graph_);
  graph_ = HmmGraph();
  return absl::OkStatus();
}

}  // namespace gmmscore
