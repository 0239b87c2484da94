// The float64 reference for fusion.h, for tests only: the definitions of
// fusion.h written as plain loops over a whole stream at once.
//
//   FusionReference ref = ReferenceFuse({ll_a, ll_b}, frames, states, options);
//   double fused_t_s = ref.fused[t * states + s];
#ifndef GMMSCORE_KERNELS_SCORE_FUSION_REFERENCE_H_
#define GMMSCORE_KERNELS_SCORE_FUSION_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "kernels/score/fusion.h"

namespace gmmscore {

struct FusionReference {
  std::vector<double> fused;          // T x S
  std::vector<double> weights;        // T x M (empty for kMax)
  std::vector<int> dominant_per_frame;  // T
};

// `loglikes[m]` is model m's T x S row-major matrix over the whole stream.
// Expects valid options (as ModelFusion::Create accepts).
FusionReference ReferenceFuse(const std::vector<std::vector<double>>& loglikes, int64_t frames,
                              int64_t states, const FusionOptions& options);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FUSION_REFERENCE_H_
