// The fused kernel's model layout (Vanek et al. 2011, section 4 and 4.1),
// built on the host once per model.
//
//   FusedLayout layout = BuildFusedLayout(model, /*states_per_block=*/64);
//
// States are stably sorted by Gaussian count (largest first) and cut into
// blocks of `states_per_block`; a block runs as many Gaussians as its
// largest state, the shorter states padded with Gaussians of weight zero
// (K = kPaddingGconst, u = v = 0). Within a block the parameters sit in
// exactly the order the kernel reads them, so every read is one coalesced
// 16-byte load per thread:
//   uv[block_uv_offset[b] + ((g * dim4 + q) * 2 + part) * S_b + lane]
// is the float4 of dimensions 4q..4q+3 of the g-th Gaussian of the state in
// slot `lane` of block b, part 0 = u, part 1 = v (dims padded with zeros to
// dim4 * 4). gconsts[block_gconst_offset[b] + g * S_b + lane] is its K.
// slot_state[b * S_b + lane] is the state in that slot, -1 for an empty slot.
// Stable sorting keeps a uniform model in natural order, so output writes
// stay coalesced.
#ifndef GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_
#define GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// K of a padding Gaussian: exp() of it is 0, yet it is finite, so the
// running log-add never computes inf - inf.
inline constexpr float kPaddingGconst = -1e30f;

struct Float4 {
  float x, y, z, w;
};

struct FusedLayout {
  int states_per_block = 0;
  int dim = 0;
  int dim4 = 0;  // ceil(dim / 4)
  int num_blocks = 0;
  std::vector<int32_t> block_gaussians;      // num_blocks
  std::vector<int64_t> block_uv_offset;      // num_blocks, in Float4 units
  std::vector<int64_t> block_gconst_offset;  // num_blocks, in floats
  std::vector<int32_t> slot_state;           // num_blocks * states_per_block
  std::vector<Float4> uv;
  std::vector<float> gconsts;

  // Gaussian evaluations per frame including padding (the kernel's work).
  int64_t padded_gaussians() const;
};

FusedLayout BuildFusedLayout(const DiagGmmModel& model, int states_per_block);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_
