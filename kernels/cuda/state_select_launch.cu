#include "kernels/cuda/state_select_launch.h"

#include <climits>
#include <cstdint>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/row_segments.cuh"

namespace gmmscore {
namespace {

constexpr int kThreads = 256;
constexpr int kDigitBits = 8;
constexpr int kBins = 1 << kDigitBits;

// A float's bits mapped so that unsigned order is numeric order (-inf lowest,
// +inf highest): the radix select below ranks these keys. -0 is read as +0,
// which the host's comparisons treat as equal to it.
__device__ __forceinline__ uint32_t OrderKey(float value) {
  const uint32_t bits = __float_as_uint(value == 0.0f ? 0.0f : value);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

struct FloatMax {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Where a frame's selection cuts: every state whose key is above
// `threshold` is kept, and of the states whose key equals it the first
// `ties` in state order (UINT_MAX: all of them).
struct Cut {
  uint32_t threshold;
  uint32_t ties;
};

// The k-th largest key of the row (k >= 1, at most the row's length) by an
// MSB-first radix select: four passes of 8 bits, each histogramming the
// keys that share the digits chosen so far and walking the bins from the
// top until k is reached. Returns that key and how many states equal to it
// the top k take.
__device__ Cut KthLargestKey(const float* __restrict__ row, int states, uint32_t k, uint32_t* histogram,
                             uint32_t* chosen) {
  uint32_t prefix = 0, mask = 0, remaining = k;
  const int lane = threadIdx.x & 31;
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    for (int b = threadIdx.x; b < kBins; b += kThreads) histogram[b] = 0;
    __syncthreads();
    for (int s = threadIdx.x; s < states; s += kThreads) {
      const uint32_t key = OrderKey(row[s]);
      if ((key & mask) == prefix) atomicAdd(&histogram[(key >> shift) & (kBins - 1)], 1u);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds bins 255 - 8l down to 248 - 8l: lane order is
      // descending digit order, so an inclusive scan over lanes counts the
      // keys at or above each lane's lowest bin.
      constexpr int kPerLane = kBins / 32;
      uint32_t own = 0;
      for (int i = 0; i < kPerLane; ++i) own += histogram[kBins - 1 - kPerLane * lane - i];
      uint32_t inclusive = own;
      for (int offset = 1; offset < 32; offset <<= 1) {
        const uint32_t other = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += other;
      }
      uint32_t before = inclusive - own;
      if (before < remaining && remaining <= inclusive) {
        for (int i = 0; i < kPerLane; ++i) {
          const int bin = kBins - 1 - kPerLane * lane - i;
          if (before + histogram[bin] >= remaining) {
            chosen[0] = static_cast<uint32_t>(bin);
            chosen[1] = remaining - before;
            break;
          }
          before += histogram[bin];
        }
      }
    }
    __syncthreads();
    prefix |= chosen[0] << shift;
    mask |= static_cast<uint32_t>(kBins - 1) << shift;
    remaining = chosen[1];
    __syncthreads();  // chosen and histogram are rewritten in the next pass
  }
  return {prefix, remaining};
}

// One block per frame (state_select_launch.h). The row is read from global
// memory on every pass (at most 7: beam max, beam count, 4 radix passes,
// compaction); a 5000-state row is 20 KB, so the passes after the first
// hit L1/L2, and the kernel stays a small fraction of the likelihoods'.
__global__ void __launch_bounds__(kThreads)
    StateSelectKernel(const SelectSegment* __restrict__ segments, int num_segments,
                      const float* __restrict__ scores, int32_t* __restrict__ counts,
                      uint32_t* __restrict__ state_ids, float* __restrict__ values) {
  using Reduce = cub::BlockReduce<uint32_t, kThreads>;
  using FloatReduce = cub::BlockReduce<float, kThreads>;
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ union {
    typename Reduce::TempStorage reduce;
    typename FloatReduce::TempStorage float_reduce;
    typename Scan::TempStorage scan;
  } temp;
  __shared__ SelectSegment segment;
  __shared__ uint32_t histogram[kBins];
  __shared__ uint32_t chosen[2];
  __shared__ float shared_best;
  __shared__ uint32_t shared_count;
  const int64_t row_index = blockIdx.x;
  if (threadIdx.x == 0) segment = segments[SegmentOfRow(segments, num_segments, row_index)];
  __syncthreads();
  const int64_t t = row_index - segment.first_row;
  const int states = segment.states;
  const uint32_t k = static_cast<uint32_t>(segment.top_k);
  const float* __restrict__ row = scores + segment.scores_offset + t * states;

  // States below the beam's floor are never kept; the floor is the host's
  // float subtraction (best - beam), so both sides draw the same line.
  uint32_t floor_key = 0;
  uint32_t within_beam = static_cast<uint32_t>(states);
  if (segment.beam > 0) {
    float best = -INFINITY;
    for (int s = threadIdx.x; s < states; s += kThreads) best = fmaxf(best, row[s]);
    best = FloatReduce(temp.float_reduce).Reduce(best, FloatMax());
    if (threadIdx.x == 0) shared_best = best;
    __syncthreads();
    floor_key = OrderKey(shared_best - segment.beam);
    uint32_t count = 0;
    for (int s = threadIdx.x; s < states; s += kThreads) count += OrderKey(row[s]) >= floor_key;
    count = Reduce(temp.reduce).Sum(count);
    if (threadIdx.x == 0) shared_count = count;
    __syncthreads();
    within_beam = shared_count;
  }
  // Within the beam are at most k: keep them all (every key >= the floor;
  // with no beam the floor 0 keeps every state). Otherwise the beam's states are the top ones by key, so the k-th
  // largest key of the row is also theirs, and at or above the floor.
  Cut cut{floor_key, UINT_MAX};
  if (within_beam > k) cut = KthLargestKey(row, states, k, histogram, chosen);

  // Kept states written in state order: one block-wide exclusive scan a
  // tile counts, packed in one word, the states above the cut (low half)
  // and the ties at it (high half) before each thread's state.
  uint32_t* __restrict__ out_ids = state_ids + segment.slots_offset + t * k;
  float* __restrict__ out_values = values + segment.slots_offset + t * k;
  uint32_t above_before_tile = 0, ties_before_tile = 0;
  for (int base = 0; base < states; base += kThreads) {
    const int s = base + threadIdx.x;
    float value = 0.0f;
    bool above = false, tie = false;
    if (s < states) {
      value = row[s];
      const uint32_t key = OrderKey(value);
      above = key > cut.threshold;
      tie = key == cut.threshold;
    }
    const uint32_t packed = (above ? 1u : 0u) | (tie ? 1u << 16 : 0u);
    uint32_t before = 0, tile_total = 0;
    Scan(temp.scan).ExclusiveSum(packed, before, tile_total);
    const uint32_t above_before = above_before_tile + (before & 0xffffu);
    const uint32_t ties_before = ties_before_tile + (before >> 16);
    if (above || (tie && ties_before < cut.ties)) {
      const uint32_t position = above_before + min(ties_before, cut.ties);
      out_ids[position] = static_cast<uint32_t>(s);
      out_values[position] = value;
    }
    above_before_tile += tile_total & 0xffffu;
    ties_before_tile += tile_total >> 16;
    __syncthreads();  // temp.scan is reused by the next tile
  }
  if (threadIdx.x == 0) {
    counts[row_index] = static_cast<int32_t>(above_before_tile + min(ties_before_tile, cut.ties));
  }
}

}  // namespace

absl::Status LaunchStateSelect(const SelectSegment* segments, int num_segments, int64_t total_rows,
                               const float* scores, int32_t* counts, uint32_t* state_ids, float* values,
                               cudaStream_t stream) {
  if (total_rows == 0 || num_segments == 0) return absl::OkStatus();
  if (total_rows > INT_MAX) return absl::InvalidArgumentError("too many frames for one selection launch");
  StateSelectKernel<<<static_cast<unsigned>(total_rows), kThreads, 0, stream>>>(segments, num_segments, scores,
                                                                               counts, state_ids, values);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch state selection kernel");
  return absl::OkStatus();
}

}  // namespace gmmscore
