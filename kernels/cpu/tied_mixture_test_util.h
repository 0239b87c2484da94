// Random tied-mixture models and features for the backends' tests (CPU and
// CUDA): several streams, codebooks of uneven sizes, codebooks with many
// states (the CUDA path's SGEMM mix) and with few (its small-codebook
// kernel), a stream weight other than 1, and states whose linear mix
// underflows on every frame (the exact log-domain recomputation).
#ifndef GMMSCORE_KERNELS_CPU_TIED_MIXTURE_TEST_UTIL_H_
#define GMMSCORE_KERNELS_CPU_TIED_MIXTURE_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/core/matrix.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

struct RandomTiedSpec {
  std::vector<FeatureStream> streams = {{0, 13}, {13, 13}, {26, 13}};
  // Per codebook: its states; its size in stream f is sizes[c % sizes.size()] + f.
  std::vector<int> states_per_codebook = {20, 3, 1, 17, 5};
  std::vector<int> sizes = {32, 7, 64};
  bool weighted_streams = true;  // stream weights 1, 0.5, 1.5, ...
  uint32_t seed = 1;
};

// States are interleaved over codebooks (not grouped by codebook). The last
// state of each codebook "starves": weight 1 on a Gaussian placed far from
// every frame and 1e-44 on the others, so its linear mix underflows.
std::shared_ptr<const TiedMixtureModel> RandomTiedModel(const RandomTiedSpec& spec);

// MFCC-scale frames (dimension 0 near 40), every 17th frame an outlier.
FloatMatrix RandomTiedFeatures(int64_t frames, int dim, uint32_t seed);

// Largest |scores - reference| / max(1, |reference| / 256) (NaN: infinity).
double MaxTiedError(const FloatMatrix& scores, const std::vector<double>& reference);

// States that starve (see RandomTiedModel).
std::vector<int> StarvingTiedStates(const TiedMixtureModel& model, const RandomTiedSpec& spec);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CPU_TIED_MIXTURE_TEST_UTIL_H_
