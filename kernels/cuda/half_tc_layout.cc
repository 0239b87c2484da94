#include "kernels/cuda/half_tc_layout.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/fused_layout.h"

namespace gmmscore {
namespace {

uint16_t HalfBits(float value) { return static_cast<__half_raw>(__float2half_rn(value)).x; }
float HalfValue(uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// Largest |y_k| about the centre that the model's Gaussians make likely:
// |mean| + 4 sigma, over every Gaussian (v = -1 / (2 var) < 0 gives var).
std::vector<double> LikelyFrameReach(const DiagGmmModel& model) {
  const int dim = model.dim();
  std::vector<double> reach(dim, 0.0);
  for (int64_t g = 0; g < model.num_gaussians(); ++g) {
    const float* u = model.means_invvars(g);
    const float* v = model.half_neg_inv_vars(g);
    for (int k = 0; k < dim; ++k) {
      if (!(v[k] < 0.0f)) continue;
      const double precision = -2.0 * v[k];
      const double mean = u[k] / precision;
      reach[k] = std::max(reach[k], std::abs(mean) + 4.0 / std::sqrt(precision));
    }
  }
  return reach;
}

// The largest |value| of every u and v column over the model's Gaussians.
std::vector<double> ColumnLargest(const DiagGmmModel& model) {
  std::vector<double> largest(2 * model.dim(), 0.0);
  for (int64_t g = 0; g < model.num_gaussians(); ++g) {
    const float* row = model.params().row(g);
    for (int k = 0; k < 2 * model.dim(); ++k) largest[k] = std::max(largest[k], std::abs(double{row[1 + k]}));
  }
  return largest;
}

// e_k for every u and v column: the model's largest |value| times 2^-e and
// the frames' likely largest times 2^e meet in the middle (their product is
// what the column contributes), the model side capped at kLargestScaled.
std::vector<int> ColumnExponents(const DiagGmmModel& model, const std::vector<double>& largest) {
  const int dim = model.dim();
  const std::vector<double> reach = LikelyFrameReach(model);
  std::vector<int> exponents(2 * dim, 0);
  for (int k = 0; k < 2 * dim; ++k) {
    const double frame = k < dim ? reach[k] : reach[k - dim] * reach[k - dim];
    if (!(largest[k] > 0.0) || !(frame > 0.0) || !std::isfinite(largest[k] * frame)) continue;
    int e = static_cast<int>(std::lround(0.5 * std::log2(largest[k] / frame)));
    const int floor_for_model = static_cast<int>(
        std::ceil(std::log2(largest[k] / HalfTensorCoreLayout::kLargestScaled)));
    e = std::clamp(std::max(e, floor_for_model), -100, 100);
    exponents[k] = e;
  }
  return exponents;
}

}  // namespace

HalfTensorCoreLayout BuildHalfTensorCoreLayout(const DiagGmmModel& model, const TensorCoreLayout& rows) {
  const int dim = model.dim();
  HalfTensorCoreLayout layout;
  layout.cols = (2 * dim + HalfTensorCoreLayout::kStep - 1) / HalfTensorCoreLayout::kStep *
                HalfTensorCoreLayout::kStep;
  const std::vector<double> largest = ColumnLargest(model);
  const std::vector<int> exponents = ColumnExponents(model, largest);
  // A column that is zero in every row adds nothing: its frames' values are
  // zeroed too (scale 0), so that a large one cannot scale the rest of its
  // frame down.
  layout.frame_scale.assign(layout.cols, 0.0f);
  for (int k = 0; k < 2 * dim; ++k) {
    layout.frame_scale[k] = largest[k] > 0.0 ? std::ldexp(1.0f, exponents[k]) : 0.0f;
  }

  const int64_t stored_rows = rows.rows + TensorCoreLayout::kChunkRows;
  layout.big.assign(stored_rows * layout.cols, 0);
  layout.small.assign(stored_rows * layout.cols, 0);
  layout.gconst.assign(stored_rows, 0.0f);
  for (int64_t r = 0; r < rows.rows; ++r) {
    const int64_t g = rows.row_gaussian[r];
    if (g < 0) {
      layout.gconst[r] = kPaddingGconst;
      continue;
    }
    const float* params = model.params().row(g);
    layout.gconst[r] = params[0];
    for (int k = 0; k < 2 * dim; ++k) {
      const float scaled = std::ldexp(params[1 + k], -exponents[k]);
      const uint16_t big = HalfBits(scaled);
      layout.big[r * layout.cols + k] = big;
      layout.small[r * layout.cols + k] = HalfBits(scaled - HalfValue(big));
    }
  }
  return layout;
}

}  // namespace gmmscore
