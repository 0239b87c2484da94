#include "kernels/cuda/half_encode_launch.h"

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/row_segments.cuh"

namespace gmmscore {
namespace {

constexpr int kThreads = 256;
constexpr float kLargestHalf = 65504.0f;

struct FloatMax {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// binary16 bits of value - best, saturated as the host saturates: a finite
// difference beyond the largest half becomes it, not infinity.
__device__ __forceinline__ uint16_t HalfBits(float value, float best) {
  float d = value - best;
  if (isfinite(d)) d = fminf(fmaxf(d, -kLargestHalf), kLargestHalf);
  return __half_as_ushort(__float2half_rn(d));
}

__global__ void __launch_bounds__(kThreads)
    HalfEncodeKernel(const HalfSegment* __restrict__ segments, int num_segments,
                     const float* __restrict__ scores, float* __restrict__ best_out,
                     uint16_t* __restrict__ halves) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ float frame_best;
  const int64_t row_index = blockIdx.x;
  const HalfSegment segment = segments[SegmentOfRow(segments, num_segments, row_index)];
  const int64_t t = row_index - segment.first_row;
  const int states = segment.states;
  const float* __restrict__ row = scores + segment.scores_offset + t * states;
  uint16_t* __restrict__ out = halves + segment.halves_offset + t * states;

  float top = -INFINITY;
  for (int s = threadIdx.x; s < states; s += kThreads) top = fmaxf(top, row[s]);
  top = Reduce(temp).Reduce(top, FloatMax());
  if (threadIdx.x == 0) {
    // No finite best (every state -inf): sent as it is, as on the host.
    // + 0: a best of -0 is +0 whichever zero fmaxf kept, as on the host.
    frame_best = isfinite(top) ? top + 0.0f : 0.0f;
    best_out[row_index] = frame_best;
  }
  __syncthreads();
  const float best = frame_best;
  for (int s = threadIdx.x; s < states; s += kThreads) out[s] = HalfBits(row[s], best);
}

}  // namespace

absl::Status LaunchHalfEncode(const HalfSegment* segments, int num_segments, int64_t total_rows,
                              const float* scores, float* best, uint16_t* halves, cudaStream_t stream) {
  if (total_rows == 0 || num_segments == 0) return absl::OkStatus();
  if (total_rows > INT_MAX) return absl::InvalidArgumentError("too many frames for one half-encoding launch");
  HalfEncodeKernel<<<static_cast<unsigned>(total_rows), kThreads, 0, stream>>>(segments, num_segments, scores,
                                                                              best, halves);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch half-encoding kernel");
  return absl::OkStatus();
}

}  // namespace gmmscore
