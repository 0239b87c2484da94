// The ML update of a Kaldi TransitionModel's probabilities from transition
// counts, as Kaldi's TransitionModel::MleUpdate does it (gmm-est's "t"
// update flag; share_for_pdfs off):
//   for every transition-state with more than one transition out, whose
//   counts c_k sum to at least min_count:
//     p_k = c_k / sum c, then three times: renormalise, floor at `floor`;
//     log_probs[tid_k] = log p_k
// States below min_count keep their probabilities. Arithmetic as Kaldi's:
// counts in float64, probabilities in float32, so that a model updated here
// and by gmm-est agree to float32 rounding.
//
//   TransitionUpdateReport report;
//   GMM_RETURN_IF_ERROR(MleTransitionUpdate(accs.transition_accs, {}, &tm, &report));
//
// Errors: INVALID_ARGUMENT (tm unchanged) when the counts are not one per
// transition-id plus index 0, or hold a negative or non-finite count, or the
// options are out of range (floor in (0, 1), min_count >= 0).
#ifndef GMMSCORE_KERNELS_TRAIN_TRANSITION_UPDATE_H_
#define GMMSCORE_KERNELS_TRAIN_TRANSITION_UPDATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/io/kaldi_transition_model.h"

namespace gmmscore {

struct TransitionUpdateOptions {
  double floor = 0.01;     // Kaldi's --transition-floor
  double min_count = 5.0;  // Kaldi's --transition-min-count
};

struct TransitionUpdateReport {
  double count = 0.0;                // transitions counted in updatable states
  double objective_improvement = 0.0;  // sum_k c_k (log p_k' - log p_k)
  int64_t updated_states = 0;
  int64_t skipped_states = 0;        // below min_count
  int64_t floored = 0;               // probabilities left at the floor
};

absl::Status MleTransitionUpdate(const std::vector<double>& counts, const TransitionUpdateOptions& options,
                                 KaldiTransitionModel* tm, TransitionUpdateReport* report);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_TRANSITION_UPDATE_H_
