// A test model whose parameters span far past binary16's range, for the
// 3xFP16 tensor-core layout (half_tc_layout_test) and kernel
// (wgmma_half_test): dimension d spans 10^(d % 9 - 4), so u runs from ~1e-4
// to ~1e4 and v from ~5e-9 to ~5e7 over the dimensions, and frames drawn
// from it give y^2 from ~1e-8 to ~1e8.
#ifndef GMMSCORE_KERNELS_CUDA_WIDE_RANGE_MODEL_H_
#define GMMSCORE_KERNELS_CUDA_WIDE_RANGE_MODEL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

inline absl::StatusOr<DiagGmmModel> WideRangeModel(int states, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), spread(0.3, 3.0);
  std::uniform_int_distribution<int> count(1, 12);
  DiagGmmModelBuilder builder(dim);
  for (int s = 0; s < states; ++s) {
    const int gaussians = count(rng);
    std::vector<double> weights(gaussians, 1.0 / gaussians), means, variances;
    for (int g = 0; g < gaussians; ++g) {
      for (int d = 0; d < dim; ++d) {
        const double scale = std::pow(10.0, d % 9 - 4);
        means.push_back(3.0 * scale * unit(rng));
        const double sigma = scale * spread(rng);
        variances.push_back(sigma * sigma);
      }
    }
    absl::Status added = builder.AddState(weights, means, variances);
    if (!added.ok()) return added;
  }
  return std::move(builder).Build();
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_WIDE_RANGE_MODEL_H_
