// The tensor-core kernel's model layout, built on the host once per model.
//
//   TensorCoreLayout layout = BuildTensorCoreLayout(model);
//
// The GEMM form [K, u, v] of every Gaussian (one row), zero-padded to
// `cols` = 1 + 2D rounded up to a multiple of 8 (the MMA's k), stored split
// for 3xTF32 as `big` = TF32(value) and `small` = TF32(value - big), with each
// state's Gaussians padded to a multiple of 8 rows by Gaussians of weight
// zero (K = kPaddingGconst). A group of 8 rows (a "row group") therefore
// belongs to one state: row_group_state[i] names it. States are cut into
// `ranges` of whole states, about kRangeRows rows each (a state larger than
// that is a range of its own); one thread block scores one range on a tile
// of frames, so every state's log-sum-exp finishes inside one block. The
// matrix has spare zero rows at the end so a block may read a whole 64-row
// chunk past its range's end.
#ifndef GMMSCORE_KERNELS_CUDA_TC_LAYOUT_H_
#define GMMSCORE_KERNELS_CUDA_TC_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

struct TensorCoreLayout {
  static constexpr int kRowGroup = 8;
  static constexpr int kChunkRows = 64;   // rows a block multiplies at once
  static constexpr int kRangeRows = 256;  // target rows per block
  int cols = 0;                           // multiple of 8
  int64_t rows = 0;                       // padded Gaussians (multiple of 8)
  std::vector<float> big;                 // (rows + kChunkRows) x cols, TF32 values
  std::vector<float> small;               // same shape: TF32 of the rounding rest
  std::vector<int32_t> row_group_state;   // rows / 8
  std::vector<int32_t> range_begin;       // in row groups; ranges + 1 entries
  std::vector<int64_t> row_gaussian;      // rows: the model's Gaussian, -1 for padding
  int num_ranges() const { return static_cast<int>(range_begin.size()) - 1; }
};

TensorCoreLayout BuildTensorCoreLayout(const DiagGmmModel& model);

// Rounds to TF32 (10 explicit mantissa bits) to nearest, ties away from
// zero, as cvt.rna.tf32.f32 does; the result is a float whose low 13 bits
// are zero.
float RoundToTf32(float value);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_TC_LAYOUT_H_
