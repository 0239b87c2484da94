#include "kernels/cuda/tied_mixture_kernels.h"

#include <cuda_runtime.h>

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_loglik_kernels.cuh"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {
namespace {

constexpr int kThreads = 256;

absl::StatusOr<unsigned> GridFor(int64_t threads, const char* what) {
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff) return absl::InvalidArgumentError(absl::StrCat(what, ": batch too large for one launch"));
  return static_cast<unsigned>(blocks);
}

// One warp per (frame, codebook).
__global__ void CodebookMaxExpKernel(const float* __restrict__ densities, const int64_t* __restrict__ codebook_begin,
                                     int num_codebooks, int64_t num_gaussians, int64_t num_frames,
                                     float* __restrict__ exps, float* __restrict__ maxes) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (warp >= num_frames * num_codebooks) return;
  const int64_t t = warp / num_codebooks;
  const int c = static_cast<int>(warp - t * num_codebooks);
  const float* row = densities + t * num_gaussians;
  float* out = exps + t * num_gaussians;
  const int64_t begin = codebook_begin[c], end = codebook_begin[c + 1];
  float max = -INFINITY;
  for (int64_t g = begin + lane; g < end; g += 32) max = fmaxf(max, row[g]);
  max = WarpMax(max);
  for (int64_t g = begin + lane; g < end; g += 32) out[g] = expf(row[g] - max);
  if (lane == 0) maxes[t * num_codebooks + c] = max;
}

// One warp per (frame, listed grouped state): a G-term dot product.
__global__ void SmallCodebookMixKernel(TiedStreamTables tables, TiedStateTables states_tables,
                                       const int32_t* __restrict__ states, int num_listed,
                                       const float* __restrict__ exps, int64_t num_gaussians, int num_states,
                                       int64_t num_frames, float* __restrict__ mix) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (warp >= num_frames * num_listed) return;
  const int64_t t = warp / num_listed;
  const int i = states[warp - t * num_listed];
  const int c = states_tables.grouped_codebook[i];
  const int first_state = states_tables.state_begin[c];
  const int states_c = states_tables.state_begin[c + 1] - first_state;
  const int64_t begin = tables.codebook_begin[c];
  const int size = static_cast<int>(tables.codebook_begin[c + 1] - begin);
  const float* w = tables.weights + tables.weight_offset[c] + (i - first_state);  // column-major, ld states_c
  const float* p = exps + t * num_gaussians + begin;
  float sum = 0.0f;
  for (int g = lane; g < size; g += 32) sum += w[static_cast<int64_t>(g) * states_c] * p[g];
  sum = WarpSum(sum);
  if (lane == 0) mix[t * num_states + i] = sum;
}

// One thread per (frame, grouped state).
__global__ void TiedStreamAccumulateKernel(TiedStreamTables tables, TiedStateTables states_tables,
                                           const float* __restrict__ mix, const float* __restrict__ maxes,
                                           const float* __restrict__ densities, int num_codebooks,
                                           int64_t num_gaussians, int num_states, int64_t num_frames,
                                           float stream_weight, bool accumulate, float* __restrict__ loglikes) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= num_frames * num_states) return;
  const int64_t t = k / num_states;
  const int i = static_cast<int>(k - t * num_states);
  const int c = states_tables.grouped_codebook[i];
  const float value = mix[k];
  float ll;
  if (value > kTiedSmallestTrustedMix) {
    ll = logf(value) + maxes[t * num_codebooks + c];
  } else {
    // The linear mix may have lost every term: log sum_g exp(log w + density)
    // in float64 over the state's own weights (as TiedMixtureCpuScorer).
    const int first_state = states_tables.state_begin[c];
    const int64_t begin = tables.codebook_begin[c];
    const int size = static_cast<int>(tables.codebook_begin[c + 1] - begin);
    const float* log_w = tables.log_weights + tables.weight_offset[c] + static_cast<int64_t>(i - first_state) * size;
    const float* d = densities + t * num_gaussians + begin;
    double best = -INFINITY;
    for (int g = 0; g < size; ++g) best = fmax(best, static_cast<double>(log_w[g]) + d[g]);
    double sum = 0.0;
    for (int g = 0; g < size; ++g) sum += exp(static_cast<double>(log_w[g]) + d[g] - best);
    ll = static_cast<float>(best + log(sum));
  }
  float* out = loglikes + t * num_states + states_tables.grouped_state[i];
  *out = (accumulate ? *out : 0.0f) + stream_weight * ll;
}

}  // namespace

absl::Status LaunchTiedExpand(const float* features, int64_t row_stride, const float* center,
                              int64_t num_frames, int dim, float* expanded, cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  absl::StatusOr<unsigned> grid = GridFor(num_frames * (1 + 2 * dim), "tied feature expansion");
  if (!grid.ok()) return grid.status();
  ExpandStridedFeaturesKernel<<<*grid, kThreads, 0, stream>>>(features, row_stride, center, num_frames, dim,
                                                               expanded);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch tied feature expansion");
  return absl::OkStatus();
}

absl::Status LaunchCodebookMaxExp(const float* densities, const int64_t* codebook_begin,
                                  int num_codebooks, int64_t num_gaussians, int64_t num_frames,
                                  float* exps, float* maxes, cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  absl::StatusOr<unsigned> grid = GridFor(num_frames * num_codebooks * 32, "codebook max/exp");
  if (!grid.ok()) return grid.status();
  CodebookMaxExpKernel<<<*grid, kThreads, 0, stream>>>(densities, codebook_begin, num_codebooks, num_gaussians,
                                                        num_frames, exps, maxes);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch codebook max/exp");
  return absl::OkStatus();
}

absl::Status LaunchSmallCodebookMix(const TiedStreamTables& stream_tables, const TiedStateTables& states_tables,
                                    const int32_t* states, int num_listed, const float* exps,
                                    int64_t num_gaussians, int num_states, int64_t num_frames, float* mix,
                                    cudaStream_t stream) {
  if (num_frames == 0 || num_listed == 0) return absl::OkStatus();
  absl::StatusOr<unsigned> grid = GridFor(num_frames * num_listed * 32, "small codebook mix");
  if (!grid.ok()) return grid.status();
  SmallCodebookMixKernel<<<*grid, kThreads, 0, stream>>>(stream_tables, states_tables, states, num_listed, exps,
                                                          num_gaussians, num_states, num_frames, mix);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch small codebook mix");
  return absl::OkStatus();
}

absl::Status LaunchTiedStreamAccumulate(const TiedStreamTables& stream_tables, const TiedStateTables& states_tables,
                                        const float* mix, const float* maxes, const float* densities,
                                        int num_codebooks, int64_t num_gaussians, int num_states,
                                        int64_t num_frames, float stream_weight, bool accumulate, float* loglikes,
                                        cudaStream_t stream) {
  if (num_frames == 0) return absl::OkStatus();
  absl::StatusOr<unsigned> grid = GridFor(num_frames * num_states, "tied stream accumulate");
  if (!grid.ok()) return grid.status();
  TiedStreamAccumulateKernel<<<*grid, kThreads, 0, stream>>>(stream_tables, states_tables, mix, maxes, densities,
                                                              num_codebooks, num_gaussians, num_states, num_frames,
                                                              stream_weight, accumulate, loglikes);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch tied stream accumulate");
  return absl::OkStatus();
}

}  // namespace gmmscore
