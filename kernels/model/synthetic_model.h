// Deterministic synthetic models and features at MFCC scale, for tests and
// benchmarks. The same spec and seed give the same bytes on every machine.
//
//   SyntheticModelSpec spec{.num_states = 5000, .min_gaussians = 16,
//                           .max_gaussians = 16, .dim = 36, .seed = 1};
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel model, GenerateSyntheticModel(spec));
//   FloatMatrix features = GenerateSyntheticFeatures(model, /*frames=*/256, /*seed=*/7);
#ifndef GMMSCORE_KERNELS_MODEL_SYNTHETIC_MODEL_H_
#define GMMSCORE_KERNELS_MODEL_SYNTHETIC_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

struct SyntheticModelSpec {
  int num_states = 100;
  // Each state draws its Gaussian count uniformly from [min, max].
  int min_gaussians = 16;
  int max_gaussians = 16;
  int dim = 39;
  uint64_t seed = 1;
};

// A model whose per-dimension scale looks like cepstra with deltas: c0 around
// 50 with spread 15, higher coefficients and deltas smaller. INVALID_ARGUMENT
// for non-positive sizes or min > max.
absl::StatusOr<DiagGmmModel> GenerateSyntheticModel(const SyntheticModelSpec& spec);

// `frames` x model.dim() features, each drawn from a randomly chosen Gaussian
// of the model (so likelihoods are in the range real speech gives), with
// occasional outliers several standard deviations out.
FloatMatrix GenerateSyntheticFeatures(const DiagGmmModel& model, int64_t frames, uint64_t seed);

// A speaker transform near the identity, as fMLLR estimates are: A = I plus
// noise of 0.005, b of spread 0.3. Row-major dim x (dim + 1) values ([A | b])
// with an offset, dim x dim (A alone) without.
std::vector<float> GenerateSyntheticTransform(int dim, bool with_offset, uint64_t seed);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_MODEL_SYNTHETIC_MODEL_H_
