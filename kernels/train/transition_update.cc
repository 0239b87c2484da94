#include "kernels/train/transition_update.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace gmmscore {
namespace {

absl::Status CheckCounts(const std::vector<double>& counts, const KaldiTransitionModel& tm) {
  const size_t expected = static_cast<size_t>(tm.num_transition_ids()) + 1;
  if (counts.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("the transition counts have ", counts.size(),
                                                   " entries, the transition model ", expected,
                                                   " (transition-ids + 1): accumulators of another model?"));
  }
  for (size_t tid = 1; tid < counts.size(); ++tid) {
    if (!std::isfinite(counts[tid]) || counts[tid] < 0.0) {
      return absl::InvalidArgumentError(
          absl::StrCat("transition-id ", tid, " has count ", counts[tid], ": counts must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

// New probabilities of one transition-state's counts, Kaldi's way (float).
std::vector<float> NewProbabilities(const double* counts, int n, double total, float floor) {
  std::vector<float> p(n);
  for (int k = 0; k < n; ++k) p[k] = static_cast<float>(counts[k] / total);
  for (int round = 0; round < 3; ++round) {
    float sum = 0.0f;
    for (float v : p) sum += v;
    const float scale = 1.0f / sum;
    for (float& v : p) v = std::max(v * scale, floor);
  }
  return p;
}

}  // namespace

absl::Status MleTransitionUpdate(const std::vector<double>& counts, const TransitionUpdateOptions& options,
                                 KaldiTransitionModel* tm, TransitionUpdateReport* report) {
  // A zero floor would let a transition never seen get log 0 = -inf, which
  // Kaldi's update refuses too.
  if (!(options.floor > 0.0 && options.floor < 1.0) || !(options.min_count >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat("transition floor ", options.floor, " must be in (0, 1) and min count ",
                                                   options.min_count, " >= 0"));
  }
  if (absl::Status ok = CheckCounts(counts, *tm); !ok.ok()) return ok;
  *report = {};
  const float floor = static_cast<float>(options.floor);
  const int num_states = static_cast<int>(tm->tuples.size());
  for (int s = 1; s <= num_states; ++s) {
    const int first = tm->first_transition_id(s);
    const int n = tm->first_transition_id(s + 1) - first;
    if (n <= 1) continue;  // nothing to estimate
    double total = 0.0;
    for (int k = 0; k < n; ++k) total += counts[first + k];
    report->count += total;
    if (total < options.min_count || total <= 0.0) {
      ++report->skipped_states;
      continue;
    }
    const std::vector<float> p = NewProbabilities(&counts[first], n, total, floor);
    for (int k = 0; k < n; ++k) {
      const float new_log = std::log(p[k]);
      if (p[k] == floor) ++report->floored;
      report->objective_improvement += counts[first + k] * (double{new_log} - double{tm->log_probs[first + k]});
      tm->log_probs[first + k] = new_log;
    }
    ++report->updated_states;
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
