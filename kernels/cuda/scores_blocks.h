// PlaceScores: where a call's whole scores go when they come back from the
// device: packed, window after window, into fixed-size pinned blocks
// (pinned_block_pool.h) that the results then keep, or, where no block is
// had, into the lane's own buffer at the plan's offsets, to be copied into
// each result as before.
//
//   ScoresPlacement placed = PlaceScores(plan, window_floats, pool->block_floats(),
//                                        [&] { return pool->Take(); });
//   for (const ScoresCopy& copy : placed.copies) ... one cudaMemcpyAsync each ...
//
// Host code only (no CUDA calls): tested without a GPU.
#ifndef GMMSCORE_KERNELS_CUDA_SCORES_BLOCKS_H_
#define GMMSCORE_KERNELS_CUDA_SCORES_BLOCKS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "kernels/cuda/batch_plan.h"

namespace gmmscore {

// One copy back from the lane's device scores buffer (plan layout).
struct ScoresCopy {
  int block = -1;              // index in ScoresPlacement::blocks; -1: the lane's host buffer
  int64_t device_offset = 0;   // first float in the device buffer
  int64_t host_offset = 0;     // first float in the block, or in the host buffer
  int64_t count = 0;           // floats

  friend bool operator==(const ScoresCopy&, const ScoresCopy&) = default;
};

struct ScoresPlacement {
  std::vector<std::shared_ptr<float>> blocks;
  // Per window: the block its scores are in (-1: the lane's host buffer,
  // or no scores come back whole), and where in it.
  std::vector<int> block_of;
  std::vector<int64_t> block_offset;
  // Every copy back, frame totals included (to the host buffer), adjacent
  // ranges merged: one copy per block for a batch of one kind.
  std::vector<ScoresCopy> copies;
};

// Items packed in order into blocks of `capacity` elements taken from
// `take` as needed: item i is counts[i] elements at offsets[i] of the device
// buffer (0: nothing to copy). An item larger than a block, and, once `take`
// returns null, every item that does not fit the last block's room, is
// copied to the host buffer at its own offset.
// The unit is the caller's: floats for scores, halves for DeviceHalves.
ScoresPlacement PackInBlocks(absl::Span<const int64_t> counts, absl::Span<const int64_t> offsets,
                             int64_t capacity, absl::FunctionRef<std::shared_ptr<float>()> take);

// window_floats[j]: window j's rows x states. Whole windows with scores
// (plan.whole) are placed in order into blocks of block_floats taken from
// `take` as needed (PackInBlocks); frame totals go to the host buffer. A
// `take` that never gives a block gives plan.copy_ranges.
ScoresPlacement PlaceScores(const BatchPlan& plan, absl::Span<const int64_t> window_floats,
                            int64_t block_floats,
                            absl::FunctionRef<std::shared_ptr<float>()> take);

// The floats of the lane's host buffer that `placed`'s copies write (the
// end of the last one there): 0 when every copy goes to a block, or none
// comes back whole (top_k, beam and half answers have buffers of their
// own), and no frame totals (they go to the host buffer, after room for
// every window's scores: then it is the whole output still).
// The buffer is page-locked: sized by the plan's whole output instead, as
// it was, a top_k lane grew it to rows x states floats whenever a batch was
// larger than any before it (a cudaFreeHost, which waits for the device, and
// a cudaMallocHost of tens of MiB), and never read it.
int64_t HostFloats(const ScoresPlacement& placed);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_SCORES_BLOCKS_H_
