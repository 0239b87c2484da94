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
//   ab[block_ab_offset[b] + ((g * dim4 + q) * 2 + part) * S_b + lane]
// is the float4 of dimensions 4q..4q+3 of the g-th Gaussian of the state in
// slot `lane` of block b, part 0 = a, part 1 = b (dims padded with zeros to
// dim4 * 4); a holds dimension 4q + i in component i, b in component
// BComponent(i), rotated by one (below).
// gconsts[block_gconst_offset[b] + g * S_b + lane] is its K'.
// slot_state[b * S_b + lane] is the state in that slot, -1 for an empty slot.
//
// Squared-distance form. The layout does not store u and v but, per
// dimension, a = sqrt(-v) = 1 / (sigma sqrt 2) and b = -u / (2 sqrt(-v)) =
// -mu' a, with K' = K - sum_d u_d^2 / (4 v_d) computed in float64, so that
//   K + u . y + v . y^2 = K' - sum_d z_d^2,   z_d = a_d y_d + b_d.
// The cost is the same two FMAs per dimension and frame, and only y (not y^2)
// is read from shared memory, but every term now has the same sign: float32
// no longer loses the result to cancellation between K, u . y and v . y^2,
// which costs the u/v form (and the cuBLAS path) about 1e-4 nats on
// speech-like input (docs/PERFORMANCE.md, "Accuracy").
// Stable sorting keeps a uniform model in natural order, so output writes
// stay coalesced.
#ifndef GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_
#define GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// K' of a padding Gaussian: exp() of it is 0, yet it is finite, so the
// running log-add never computes inf - inf.
inline constexpr float kPaddingGconst = -1e30f;

// Where b's float4 holds dimension 4q + i: component (i + 1) % 4, so that a_d
// and b_d, loaded by two 128-bit loads into registers 4n + i and 4m + (i + 1)
// % 4, sit in registers of opposite parity. Unrotated, the FFMA z = a x + b
// read three registers of one parity (x too is a 128-bit load's component i)
// and Nsight Compute counted 1.13 dispatch-stall cycles per issued
// instruction in fused8x4 (H200, 2026-11-28).
inline constexpr int BComponent(int i) { return (i + 1) % 4; }

struct Float4 {
  float x, y, z, w;
};

struct FusedLayout {
  int states_per_block = 0;
  int dim = 0;
  int dim4 = 0;  // ceil(dim / 4)
  int num_blocks = 0;
  std::vector<int32_t> block_gaussians;      // num_blocks
  std::vector<int64_t> block_ab_offset;      // num_blocks, in Float4 units
  std::vector<int64_t> block_gconst_offset;  // num_blocks, in floats
  std::vector<int32_t> slot_state;           // num_blocks * states_per_block
  std::vector<Float4> ab;
  std::vector<float> gconsts;

  // Gaussian evaluations per frame including padding (the kernel's work).
  int64_t padded_gaussians() const;
};

FusedLayout BuildFusedLayout(const DiagGmmModel& model, int states_per_block);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FUSED_LAYOUT_H_
