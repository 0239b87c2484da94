#include "kernels/train/gmm_init.h"

#include <algorithm>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace gmmscore {

void FrameMoments(ConstMatrixView frames, std::vector<double>* mean, std::vector<double>* variance) {
  const int64_t dim = frames.cols;
  mean->assign(dim, 0.0);
  variance->assign(dim, 0.0);
  if (frames.rows == 0) return;
  // Two passes: the variance around the mean, which does not cancel at
  // large feature offsets as E[x^2] - E[x]^2 would.
  for (int64_t t = 0; t < frames.rows; ++t) {
    for (int64_t d = 0; d < dim; ++d) (*mean)[d] += frames.at(t, d);
  }
  for (double& m : *mean) m /= static_cast<double>(frames.rows);
  for (int64_t t = 0; t < frames.rows; ++t) {
    for (int64_t d = 0; d < dim; ++d) {
      const double diff = frames.at(t, d) - (*mean)[d];
      (*variance)[d] += diff * diff;
    }
  }
  for (double& v : *variance) v /= static_cast<double>(frames.rows);
}

absl::StatusOr<NaturalGmm> InitGmmFromFrames(ConstMatrixView frames, int num_gauss,
                                             std::mt19937_64& rng) {
  if (num_gauss < 1 || frames.rows < num_gauss) {
    return absl::InvalidArgumentError(absl::StrCat("cannot start ", num_gauss, " Gaussians from ",
                                                   frames.rows, " frames"));
  }
  std::vector<double> mean, variance;
  FrameMoments(frames, &mean, &variance);
  const double largest = *std::max_element(variance.begin(), variance.end());
  if (!(largest > 0.0)) {
    return absl::InvalidArgumentError("the features have no variance in any dimension");
  }
  for (double& v : variance) v = std::max(v, 1e-3 * largest);
  NaturalGmm gmm;
  gmm.dim = static_cast<int>(frames.cols);
  NaturalState& state = gmm.states.emplace_back();
  std::unordered_set<int64_t> used;
  std::uniform_int_distribution<int64_t> pick(0, frames.rows - 1);
  for (int g = 0; g < num_gauss; ++g) {
    int64_t t = pick(rng);
    while (!used.insert(t).second) t = pick(rng);
    state.weights.push_back(1.0 / num_gauss);
    for (int64_t d = 0; d < frames.cols; ++d) state.means.push_back(frames.at(t, d));
    state.variances.insert(state.variances.end(), variance.begin(), variance.end());
  }
  return gmm;
}

}  // namespace gmmscore
