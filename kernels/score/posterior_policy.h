// PosteriorPolicy: which state posteriors of a frame count towards a
// stream's adaptation statistics, and how silence is left out. Defined here,
// beside the scoring contract, because the backends that gather statistics
// while scoring (fmllr_gather.h) apply it on the device; the host applies it
// in kernels/train/state_posteriors.h (which also validates it).
#ifndef GMMSCORE_KERNELS_SCORE_POSTERIOR_POLICY_H_
#define GMMSCORE_KERNELS_SCORE_POSTERIOR_POLICY_H_

#include <cstdint>
#include <vector>

namespace gmmscore {

struct PosteriorPolicy {
  std::vector<int32_t> silence_states;  // any order, no repeats needed
  double silence_threshold = 0.0;       // 0: off; else in (0, 1]
  double min_posterior = 1e-3;          // scores' softmax only
};

// States more than this many nats below a frame's best have posteriors under
// e^-30 (1e-13) each: left out of the softmax's sum and of the pairs, which
// spares an exp for nearly every state of a large model.
inline constexpr double kNegligiblePosteriorNats = 30.0;

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_POSTERIOR_POLICY_H_
