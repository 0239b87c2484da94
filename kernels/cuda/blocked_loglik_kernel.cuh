// The register-blocked fused kernel (issue 4): the fused kernel's layout,
// grid and squared-distance arithmetic, with each thread evaluating a GROUP
// of Policy::kGaussiansPerThread Gaussians of its state at once (fused8x2:
// two, fused8x4: four; loglik_policy.h says which is chosen and why).
//
// Why: on large windows the fused kernels are issue-bound, not memory-bound
// (docs/PERFORMANCE.md, "What Nsight Compute says"): per Gaussian and frame
// they issue 2D FFMAs, one broadcast LDS.128 of the frame per 8 FFMAs, ~10
// instructions of running log-add and loop overhead, so only about two
// issue slots in three are FFMAs. Here
//  - each LDS.128 of a frame quad feeds every Gaussian of the group: 8 FFMAs
//    per member per shared load instead of 8 in all;
//  - the frames sit in shared memory as [dim4][kFrames] quads, so the frames
//    of one quad are at compile-time offsets from one address (no per-frame
//    address arithmetic);
//  - the log-add runs in base 2: l = acc * log2(e) + K' * log2(e) is one FFMA
//    that replaces the fused kernel's acc + K' FADD, exponentials are a bare
//    MUFU.EX2 (ex2.approx.ftz), and the result is converted back with ln 2 once
//    per output;
//  - the group's terms are merged into the running (max, sum) together: one
//    rescaling exponential per group and frame instead of one per Gaussian;
//  - the dimension loop is written out twice (two quads per trip) with two
//    register sets of model parameters used in turn, so the one-quad-ahead
//    prefetch needs no register copies (fused16 copies 8 per quad).
// Counted from the source for D = 36 (dim4 = 9) and a pair, per Gaussian and
// frame: 72 FFMAs + 4.5 LDS.128 + 2.25 LDG.128 + ~6 log-add + ~7 loop,
// address, accumulator-reset and tail-copy instructions: ~92, of which 78%
// FFMAs, against ~100 (71% FFMAs) for fused16. Nsight Compute counts 76%
// FFMAs for a group of four (H100, 2026-11-27).
//
// The layout is BuildFusedLayout's, unchanged: Gaussians g and g + 1 of a
// slot are dim4 * 2 * kStates float4s apart. A count that is not a multiple
// of the group ends with a short group whose missing members re-read the
// first one's parameters (no read past the block) and get K' = -inf, so they
// add exp2(-inf) = 0 exactly and never become the running max; padding
// Gaussians (K' = kPaddingGconst, finite) behave as in the fused kernel.
// Frames beyond the window and the dimension padding are zeros in shared
// memory; empty slots (slot_state < 0) compute on padding Gaussians and
// write nothing.
//
// Slices (gridDim.z > 1): each block takes a contiguous run of its states'
// groups and writes (max, sum) partials that MergeSlicesKernel folds, as
// the split kernel does. They exist for the last wave: at T = 256 on
// 5000 x 256 x 36 the 2528 blocks fill 3.2 waves of 792 resident blocks,
// and the fourth runs a fifth full (ChooseBlockedSlices, loglik_policy.h).
#ifndef GMMSCORE_KERNELS_CUDA_BLOCKED_LOGLIK_KERNEL_CUH_
#define GMMSCORE_KERNELS_CUDA_BLOCKED_LOGLIK_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/fused_loglik_kernel.cuh"
#include "kernels/cuda/internal/frame_staging.cuh"

namespace gmmscore {
namespace blocked_detail {

// float32 log2(e) and ln(2). Their product is 1 within 2^-24, so the base
// change adds no more than a float32 rounding of the result.
inline constexpr float kLog2E = 1.44269504088896341f;
inline constexpr float kLn2 = 0.693147180559945309f;

// 2^x as one MUFU.EX2. exp2f() would add denormal handling around it;
// results below 2^-126 flush to zero, which only drops terms under 1e-38 of
// the running maximum.
__device__ __forceinline__ float FastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(x) as one MUFU.LG2 (x >= 1 here: the running maximum's own term).
__device__ __forceinline__ float FastLog2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Adds 2^l[0] + ... + 2^l[kGroup - 1] to the running sum 2^max * sum (base
// 2). The new maximum is taken first, so every exponent is <= 0: exp2 of
// (old max - new max) rescales the sum, the terms are scaled to the new
// maximum. With the running max at -inf (no term yet) the rescale is
// exp2(-inf) = 0 and sum is 0 anyway; l[j] = -inf (a short group's missing
// Gaussian) adds 0. None computes inf - inf as long as l[0] is finite, which
// K' (finite, padding included) and finite features guarantee. While the
// maximum stands the rescale is exp2(0), 1 from MUFU.EX2 (were it 1 ulp off,
// 128 groups would drift the result by under 2e-5 nats, inside the bound).
template <int kGroup>
__device__ __forceinline__ void LogAddGroup2(const float (&l)[kGroup], float& max, float& sum) {
  float larger = max;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) larger = fmaxf(larger, l[j]);
  float added = fmaf(sum, FastExp2(max - larger), FastExp2(l[0] - larger));
#pragma unroll
  for (int j = 1; j < kGroup; ++j) added += FastExp2(l[j] - larger);
  sum = added;
  max = larger;
}

// One quad (dims 4q..4q+3) of every Gaussian of a group: a and b of each.
template <int kGroup>
struct GroupQuad {
  float4 a[kGroup], b[kGroup];
};

// Member j's part a of the quad is at ab + at + member[j]; part b is kStates
// float4s further (fused_layout.h). 2 * kGroup coalesced LDG.128 per thread.
template <int kStates, int kGroup>
__device__ __forceinline__ GroupQuad<kGroup> LoadGroupQuad(const float4* ab, uint32_t at,
                                                           const uint32_t (&member)[kGroup]) {
  GroupQuad<kGroup> quad;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    const float4* part_a = ab + (at + member[j]);
    quad.a[j] = __ldg(part_a);
    quad.b[j] = __ldg(part_a + kStates);
  }
  return quad;
}

// acc[j][f] -= squared distance over the quad, for frames yq[0..kFrames):
// one broadcast LDS.128 per frame feeds 8 * kGroup FFMAs.
template <int kFrames, int kGroup>
__device__ __forceinline__ void AccumulateGroupQuad(const GroupQuad<kGroup>& p, const float4* yq,
                                                    float (&acc)[kGroup][kFrames]) {
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    const float4 y = yq[f];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) acc[j][f] = SubtractSquaredDistance(p.a[j], p.b[j], y, acc[j][f]);
  }
}

}  // namespace blocked_detail

// `partials`: null with one slice; else [slice][frame][state] (max, sum)
// pairs in natural-log units, as two planes of slices * frames * states.
template <typename Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocksPerSm)
    BlockedLoglikKernel(const FusedKernelArgs args, float* __restrict__ partials) {
  using blocked_detail::kLn2;
  using blocked_detail::kLog2E;
  constexpr int kFrames = Policy::kFramesPerBlock;
  constexpr int kStates = Policy::kStatesPerBlock;
  constexpr int kGroup = Policy::kGaussiansPerThread;
  static_assert(Policy::kThreads == kStates, "one thread per state");
  static_assert(kGroup >= 2, "a group of one is the fused kernel");
  extern __shared__ float4 shared_frames[];  // [dim4][kFrames]: y
  const int dim4 = args.dim4;
  const float4* __restrict__ y4 = shared_frames;

  // Frame tiles run along x, as in the fused kernel, so the tiles that share
  // a block of states read its parameters from L2 at about the same time.
  const int block = blockIdx.y;
  const int lane = threadIdx.x;
  const int64_t first_frame = static_cast<int64_t>(blockIdx.x) * kFrames;

  // Stage the frames transposed to [quad][frame][4].
  StageFrames<kFrames, true>(args.features, args.center, args.num_frames, args.dim, dim4,
                             first_frame, lane, kStates, reinterpret_cast<float*>(shared_frames));
  __syncthreads();

  float running_max[kFrames];
  float running_sum[kFrames];
  StartLogSums(running_max, running_sum);

  // This block's slice: whole groups [begin, end) of the block's Gaussians.
  const int gaussians = args.block_gaussians[block];
  const int groups = (gaussians + kGroup - 1) / kGroup;
  const int per_slice = (groups + gridDim.z - 1) / gridDim.z;
  const int begin = min(gaussians, static_cast<int>(blockIdx.z) * per_slice * kGroup);
  const int end = min(gaussians, begin + per_slice * kGroup);
  const float* gconst = args.gconsts + args.block_gconst_offset[block] + lane;
  // Model reads are `ab + offset` with 32-bit offsets in float4s (the
  // launcher checks that a block fits): one 64-bit base instead of a 64-bit
  // pointer per member keeps the kernel under its register budget.
  const float4* ab = args.ab + args.block_ab_offset[block] + lane;
  const uint32_t stride = static_cast<uint32_t>(dim4) * 2 * kStates;  // one Gaussian of a slot to the next
  // Offset of quad 0 (part a) of the group's first Gaussian, and from it to
  // each member's; 0 for a missing member of a short last group (its
  // parameters are the first's again: read, never counted).
  uint32_t first = static_cast<uint32_t>(begin) * stride;
  uint32_t member[kGroup];
#pragma unroll
  for (int j = 0; j < kGroup; ++j) member[j] = begin + j < end ? j * stride : 0;

  // Two register sets of one quad of the group, used in turn (ping-pong):
  // while one feeds the FFMAs the other is being loaded, one quad ahead.
  // Writing the loop twice over instead of copying `next` into `current`
  // saves the 8 * kGroup register moves per quad that a rotating prefetch costs.
  blocked_detail::GroupQuad<kGroup> set_a{}, set_b{};
  if (begin < end) set_a = blocked_detail::LoadGroupQuad<kStates>(ab, first, member);

  for (int g = begin; g < end; g += kGroup) {
    // K' in base 2, loaded here so the loads are done by the log-add; -inf
    // for a missing member.
    float k[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      k[j] = j == 0 || g + j < end ? __ldg(gconst + (g + j) * kStates) * kLog2E : -INFINITY;
    }
    // The next group: Gaussians g + kGroup on (a missing member re-reads
    // its first). After the last group the prefetch re-reads this group's
    // quad 0 instead (in bounds, cached, unused): an unconditional load lets
    // the register set it overwrites die at its last use, where a skipped
    // load would keep the old set alive through the next quad.
    const bool more = g + kGroup < end;
    const uint32_t next_first = more ? first + kGroup * stride : first;
    uint32_t next_member[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      next_member[j] = more ? (g + kGroup + j < end ? j * stride : 0) : member[j];
    }

    float acc[kGroup][kFrames];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
#pragma unroll
      for (int f = 0; f < kFrames; ++f) acc[j][f] = 0.0f;
    }

    // Invariant: set_a holds quad q, whose part a is at offset `quad`. Quad
    // q + 1 of a Gaussian is 2 * kStates float4s after quad q.
    uint32_t quad = first;
    const float4* yq = y4;
    int q = 0;
    for (; q + 2 <= dim4; q += 2) {
      set_b = blocked_detail::LoadGroupQuad<kStates>(ab, quad + 2 * kStates, member);
      blocked_detail::AccumulateGroupQuad<kFrames>(set_a, yq, acc);
      // Quad q + 2, or after the last quad the next group's first.
      const bool end = q + 2 == dim4;
      uint32_t at_member[kGroup];
#pragma unroll
      for (int j = 0; j < kGroup; ++j) at_member[j] = end ? next_member[j] : member[j];
      set_a = blocked_detail::LoadGroupQuad<kStates>(ab, end ? next_first : quad + 4 * kStates, at_member);
      blocked_detail::AccumulateGroupQuad<kFrames>(set_b, yq + kFrames, acc);
      quad += 4 * kStates;
      yq += 2 * kFrames;
    }
    if (q < dim4) {  // odd dim4: the last quad is in set_a
      set_b = blocked_detail::LoadGroupQuad<kStates>(ab, next_first, next_member);
      blocked_detail::AccumulateGroupQuad<kFrames>(set_a, yq, acc);
      set_a = set_b;  // once per group, not per quad
    }

#pragma unroll
    for (int f = 0; f < kFrames; ++f) {
      float l[kGroup];
#pragma unroll
      for (int j = 0; j < kGroup; ++j) l[j] = fmaf(acc[j][f], kLog2E, k[j]);
      blocked_detail::LogAddGroup2(l, running_max[f], running_sum[f]);
    }
    first = next_first;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) member[j] = next_member[j];
  }

  const int state = args.slot_state[block * kStates + lane];
  if (state < 0) return;
  const int64_t plane = static_cast<int64_t>(gridDim.z) * args.num_frames * args.num_states;
#pragma unroll
  for (int f = 0; f < kFrames; ++f) {
    const int64_t frame = first_frame + f;
    if (frame >= args.num_frames) continue;
    if (partials == nullptr) {
      // (max + log2 sum) ln 2 with one rounding of the large term.
      args.loglikes[frame * args.num_states + state] =
          fmaf(running_max[f], kLn2, blocked_detail::FastLog2(running_sum[f]) * kLn2);
    } else {
      // An empty slice (fewer groups than slices) leaves (-inf, 0), which
      // the merge skips.
      const int64_t at = (static_cast<int64_t>(blockIdx.z) * args.num_frames + frame) * args.num_states + state;
      partials[at] = running_max[f] * kLn2;
      partials[plane + at] = running_sum[f];
    }
  }
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_BLOCKED_LOGLIK_KERNEL_CUH_
