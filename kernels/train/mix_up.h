// Mixing-up: more Gaussians by splitting the heaviest, as Kaldi's
// DiagGmm::Split (src/gmm/diag-gmm.cc) and, for an acoustic model,
// AmDiagGmm::SplitByCount with GetSplitTargets (src/gmm/am-diag-gmm.cc).
//
//   std::mt19937_64 rng(seed);
//   SplitState(/*target=*/512, /*perturb_factor=*/0.01, rng, &gmm.states[0]);
//   MixUpModel(state_occupancies, /*target_total=*/4000, 0.01, 0.2, 20, rng, &gmm);
//
// Splitting Gaussian g halves its weight, copies it, and moves the two means
// apart by +- perturb_factor * sigma * n, n ~ N(0, I) drawn per dimension
// (Kaldi adds perturb_factor * n / sigma to mean/var, the same thing).
#ifndef GMMSCORE_KERNELS_TRAIN_MIX_UP_H_
#define GMMSCORE_KERNELS_TRAIN_MIX_UP_H_

#include <random>
#include <vector>

#include "absl/status/status.h"
#include "kernels/train/natural_gmm.h"

namespace gmmscore {

// Splits the heaviest Gaussian of `state` (the first of equal weights) until
// it has `target` Gaussians. INVALID_ARGUMENT when target < its count or
// the state is empty; nothing to do when equal.
absl::Status SplitState(int target, double perturb_factor, int dim, std::mt19937_64& rng,
                        NaturalState* state);

// Kaldi's GetSplitTargets: each state gets Gaussians in proportion to
// occupancy^power, at least 1, never so many that a Gaussian would have fewer
// than min_count frames; returns the per-state targets.
std::vector<int> SplitTargets(const std::vector<double>& state_occupancy, int target_total,
                              double power, double min_count);

// Splits every state whose target exceeds its count. INVALID_ARGUMENT when
// the occupancies are not one per state.
absl::Status MixUpModel(const std::vector<double>& state_occupancy, int target_total,
                        double perturb_factor, double power, double min_count,
                        std::mt19937_64& rng, NaturalGmm* gmm);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_MIX_UP_H_
