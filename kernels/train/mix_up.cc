#include "kernels/train/mix_up.h"

#include <cmath>
#include <queue>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {

absl::Status SplitState(int target, double perturb_factor, int dim, std::mt19937_64& rng,
                        NaturalState* state) {
  int count = state->num_gaussians();
  if (count == 0 || target < count) {
    return absl::InvalidArgumentError(absl::StrCat("cannot split a state of ", count,
                                                   " Gaussians to ", target));
  }
  std::normal_distribution<double> normal;
  while (count < target) {
    int heaviest = 0;
    for (int g = 1; g < count; ++g) {
      if (state->weights[g] > state->weights[heaviest]) heaviest = g;
    }
    state->weights[heaviest] /= 2;
    state->weights.push_back(state->weights[heaviest]);
    const int64_t from = static_cast<int64_t>(heaviest) * dim;
    for (int d = 0; d < dim; ++d) {
      state->variances.push_back(state->variances[from + d]);
      state->means.push_back(state->means[from + d]);
    }
    const int64_t to = static_cast<int64_t>(count) * dim;
    for (int d = 0; d < dim; ++d) {
      const double shift = perturb_factor * normal(rng) * std::sqrt(state->variances[from + d]);
      state->means[to + d] += shift;
      state->means[from + d] -= shift;
    }
    ++count;
  }
  return absl::OkStatus();
}

std::vector<int> SplitTargets(const std::vector<double>& state_occupancy, int target_total,
                              double power, double min_count) {
  struct Candidate {
    int state;
    int gaussians;
    double score;  // occupancy^power; 0 once min_count stops it
    bool operator<(const Candidate& other) const {
      return score / gaussians < other.score / other.gaussians;
    }
  };
  std::priority_queue<Candidate> queue;
  const int num_states = static_cast<int>(state_occupancy.size());
  for (int s = 0; s < num_states; ++s) queue.push({s, 1, std::pow(state_occupancy[s], power)});
  for (int total = num_states; total < target_total && !queue.empty();) {
    Candidate top = queue.top();
    if (top.score == 0.0) break;  // nothing may split any more
    queue.pop();
    if ((top.gaussians + 1) * min_count >= state_occupancy[top.state]) {
      top.score = 0.0;
    } else {
      ++top.gaussians;
      ++total;
    }
    queue.push(top);
  }
  std::vector<int> targets(num_states, 1);
  for (; !queue.empty(); queue.pop()) targets[queue.top().state] = queue.top().gaussians;
  return targets;
}

absl::Status MixUpModel(const std::vector<double>& state_occupancy, int target_total,
                        double perturb_factor, double power, double min_count,
                        std::mt19937_64& rng, NaturalGmm* gmm) {
  if (static_cast<int>(state_occupancy.size()) != gmm->num_states()) {
    return absl::InvalidArgumentError(absl::StrCat(state_occupancy.size(), " occupancies for ",
                                                   gmm->num_states(), " states"));
  }
  const std::vector<int> targets = SplitTargets(state_occupancy, target_total, power, min_count);
  for (int s = 0; s < gmm->num_states(); ++s) {
    NaturalState& state = gmm->states[s];
    if (targets[s] > state.num_gaussians()) {
      GMM_RETURN_IF_ERROR(SplitState(targets[s], perturb_factor, gmm->dim, rng, &state));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
