#include "kernels/cuda/fusion_launch.h"

#include <climits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/row_segments.cuh"
#include "kernels/cuda/gemm_loglik_kernels.cuh"  // WarpSum

namespace gmmscore {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Keeps the better (value, state) candidate: the higher value, then the
// lower state, as the host's first-maximum scan does (-inf rows included).
__device__ __forceinline__ void KeepBest(float& value, int& state, float other_value, int other_state) {
  if (other_value > value || (other_value == value && other_state < state)) {
    value = other_value;
    state = other_state;
  }
}

// One block per fused frame (fusion_launch.h). Every model row is read once,
// coalesced over states; the fused row is written once and, for its total,
// read back by the thread that wrote it.
__global__ void __launch_bounds__(kThreads)
    FusionKernel(const FusionSegment* __restrict__ segments, int num_segments,
                 const float* const* __restrict__ models, const float* __restrict__ log_weights,
                 float* __restrict__ fused, float* __restrict__ totals, int* __restrict__ winners) {
  __shared__ FusionSegment segment;
  __shared__ float log_w[kMaxDeviceFusionModels];
  __shared__ const float* rows[kMaxDeviceFusionModels];
  __shared__ float partial_value[kWarps];
  __shared__ int partial_state[kWarps];
  __shared__ float row_best;
  const int64_t row = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) segment = segments[SegmentOfRow(segments, num_segments, row)];
  __syncthreads();
  const int64_t t = row - segment.first_row;
  const int num_models = segment.num_models;
  const int states = segment.states;
  for (int m = threadIdx.x; m < num_models; m += kThreads) {
    log_w[m] = segment.weighted ? log_weights[segment.weights_offset + t * num_models + m] : 0.0f;
    rows[m] = models[segment.models_offset + m] + t * states;
  }
  __syncthreads();

  float* out = fused + segment.out_offset + t * states;
  float best_value = -INFINITY;
  int best_state = INT_MAX;
  for (int s = threadIdx.x; s < states; s += kThreads) {
    float value;
    if (segment.weighted) {
      float largest = -INFINITY;
      for (int m = 0; m < num_models; ++m) largest = fmaxf(largest, log_w[m] + rows[m][s]);
      if (largest == -INFINITY) {
        value = -INFINITY;
      } else {
        float sum = 0.0f;
        for (int m = 0; m < num_models; ++m) sum += expf(log_w[m] + rows[m][s] - largest);
        value = largest + logf(sum);
      }
    } else {
      value = rows[0][s];
      for (int m = 1; m < num_models; ++m) value = fmaxf(value, rows[m][s]);
    }
    out[s] = value;
    KeepBest(best_value, best_state, value, s);
  }

  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = __shfl_xor_sync(0xffffffffu, best_value, offset);
    const int other_state = __shfl_xor_sync(0xffffffffu, best_state, offset);
    KeepBest(best_value, best_state, other_value, other_state);
  }
  if (lane == 0) {
    partial_value[warp] = best_value;
    partial_state[warp] = best_state;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) KeepBest(best_value, best_state, partial_value[w], partial_state[w]);
    row_best = best_value;
    int winner = 0;
    if (best_state < states) {
      float winner_term = -INFINITY;
      for (int m = 0; m < num_models; ++m) {
        const float term = log_w[m] + rows[m][best_state];
        if (term > winner_term) {
          winner_term = term;
          winner = m;
        }
      }
    }
    winners[row] = winner;
  }
  if (segment.totals_offset < 0) return;  // uniform over the block
  __syncthreads();
  const float max = row_best;
  float sum = 0.0f;
  if (max != -INFINITY) {
    for (int s = threadIdx.x; s < states; s += kThreads) sum += expf(out[s] - max);
  }
  sum = WarpSum(sum);
  __syncthreads();  // partial_value is reused
  if (lane == 0) partial_value[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += partial_value[w];
    totals[segment.totals_offset + t] = max == -INFINITY ? -INFINITY : max + logf(total);
  }
}

}  // namespace

absl::Status LaunchFusion(const FusionSegment* segments, int num_segments, int64_t total_rows,
                          const float* const* models, const float* log_weights, float* fused,
                          float* totals, int* winners, cudaStream_t stream) {
  if (total_rows == 0 || num_segments == 0) return absl::OkStatus();
  if (total_rows > INT_MAX) return absl::InvalidArgumentError("too many fused frames for one launch");
  FusionKernel<<<static_cast<unsigned>(total_rows), kThreads, 0, stream>>>(
      segments, num_segments, models, log_weights, fused, totals, winners);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fusion kernel");
  return absl::OkStatus();
}

}  // namespace gmmscore
