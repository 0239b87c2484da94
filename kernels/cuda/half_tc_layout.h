// The model layout of the 3xFP16 wgmma kernel (wgmma_half_loglik_kernel.cuh),
// built on the host once per model over the rows of the TF32 layout.
//
//   const TensorCoreLayout rows = BuildTensorCoreLayout(model);
//   const HalfTensorCoreLayout halves = BuildHalfTensorCoreLayout(model, rows);
//
// Why binary16 instead of TF32: both keep 10 explicit mantissa bits, so a
// big + small split gives the same ~22 bits either way, but an f16 wgmma
// reads k = 16 per instruction against 8 for TF32 at the same time each:
// half the MMAs, half the A-fragment registers and half the model bytes per
// chunk. What binary16 lacks is range (5 exponent bits), which this layout
// and the kernel make up for with exact power-of-two scales:
//  - K leaves the GEMM and stays float32 (`gconst`), added to each product
//    in the epilogue: K spans the widest range and pads with -FLT_MAX.
//  - Column k of the u and v parts is multiplied by 2^-e_k and the frames'
//    column k by 2^e_k (`frame_scale`), e_k balancing the column's largest
//    model value against the largest frame value the model's own Gaussians
//    make likely (|mean| + 4 sigma about the centre, squared for the v
//    part), with the model side at most kLargestScaled.
//  - A frame whose scaled values still pass kLargestScaled (an outlier far
//    beyond the model) is scaled down by a power of two in the kernel, and
//    its products scaled back up in the epilogue.
//  - A column that is zero in every row gets frame scale 0.
// Where the split is less exact than TF32's: a small part below binary16's
// normal range (2^-14 of the scaled unit) keeps an absolute step of 2^-24,
// so a value far below its column's largest loses bits TF32 would keep. The
// error that adds is about 2^-25 of the scaled frame value per product
// (balanced scales make that about 2^-25 sqrt(largest product of the
// column)). Measured within the bound on synthetic models and on
// wide_range_model.h (columns spread 1e16 apart, values within a column
// about 100x); a model whose values spread far more within one column is
// not measured.
// Rows are those of TensorCoreLayout (same row groups, ranges and padding).
#ifndef GMMSCORE_KERNELS_CUDA_HALF_TC_LAYOUT_H_
#define GMMSCORE_KERNELS_CUDA_HALF_TC_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "kernels/cuda/tc_layout.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

struct HalfTensorCoreLayout {
  static constexpr int kStep = 16;                     // the f16 MMA's k
  static constexpr float kLargestScaled = 0x1.0p14f;   // 1/4 of binary16's range
  int cols = 0;                      // the 2D u and v columns, rounded up to kStep
  std::vector<uint16_t> big;         // (rows + kChunkRows) x cols, binary16 bits
  std::vector<uint16_t> small;       // binary16 of the rounding rest
  std::vector<float> gconst;         // rows + kChunkRows: K; kPaddingGconst on padding rows
  std::vector<float> frame_scale;    // cols: 2^e_k for a frame's column k, 0 past 2D
};

// Column k < D is u_k (frames give y_k), column D + k is v_k (frames give
// y_k^2), matching the model's params() columns 1..2D.
HalfTensorCoreLayout BuildHalfTensorCoreLayout(const DiagGmmModel& model, const TensorCoreLayout& rows);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_HALF_TC_LAYOUT_H_
