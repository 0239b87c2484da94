#include "kernels/cuda/fmllr_gather_launch.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/score/posterior_policy.h"

namespace gmmscore {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kTermsThreads = 128;
constexpr int kTermsWarps = kTermsThreads / 32;
constexpr int kGramThreads = 256;
constexpr int kGramEntriesPerThread = 4;
constexpr int kGramEntriesPerBlock = kGramThreads * kGramEntriesPerThread;
// Shared memory a gram block may take (under the 48 KB default).
constexpr int kGramSharedBytes = 40 * 1024;

__device__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
__device__ double WarpMax(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
__device__ double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// The block's max (every thread gets it). `scratch`: kTermsWarps floats.
__device__ float BlockMax(float v, float* scratch) {
  v = WarpMax(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < kTermsWarps; ++w) m = fmaxf(m, scratch[w]);
  return m;
}

__device__ double BlockSum(double v, double* scratch) {
  v = WarpSum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double s = 0.0;
  for (int w = 0; w < kTermsWarps; ++w) s += scratch[w];
  return s;
}

// One warp: the Gaussian posteriors of `state` for the frame y = x - c
// (weight `weight` in all), summed into the lane's a and b of dimensions
// lane and lane + 32. `gamma`: the warp's max_gaussians doubles.
__device__ void AddStateTerms(const FmllrGatherWindow& w, int dim, int state, float weight,
                              const double* y, double* gamma, double a[2], double b[2]) {
  const int lane = threadIdx.x % 32;
  const int pc = 1 + 2 * dim;
  const int64_t first = w.state_offsets[state];
  const int n = static_cast<int>(w.state_offsets[state + 1] - first);
  double best = -INFINITY;
  for (int k = lane; k < n; k += 32) {
    const float* prm = w.params + (first + k) * pc;
    double l = prm[0];
    for (int d = 0; d < dim; ++d) {
      l += y[d] * (static_cast<double>(prm[1 + d]) + static_cast<double>(prm[1 + dim + d]) * y[d]);
    }
    gamma[k] = l;
    best = fmax(best, l);
  }
  best = WarpMax(best);
  double total = 0.0;
  for (int k = lane; k < n; k += 32) {
    const double e = exp(gamma[k] - best);
    gamma[k] = e;
    total += e;
  }
  total = WarpSum(total);
  const double scale = static_cast<double>(weight) / total;
  __syncwarp();
  for (int k = 0; k < n; ++k) {
    const double g = gamma[k] * scale;
    const float* prm = w.params + (first + k) * pc;
    for (int h = 0; h < 2; ++h) {
      const int d = lane + 32 * h;
      if (d >= dim) break;
      const double inv_var = -2.0 * static_cast<double>(prm[1 + dim + d]);
      a[h] += g * inv_var;
      // mu/var on raw features: (mu - c)/var + c/var.
      b[h] += g * (static_cast<double>(prm[1 + d]) + inv_var * static_cast<double>(w.center[d]));
    }
  }
  __syncwarp();  // gamma is rewritten by the warp's next state
}

// Block (frame blockIdx.x of window blockIdx.y): the frame's terms.
__global__ void FmllrTermsKernel(const FmllrGatherWindow* windows, int dim, int max_gaussians) {
  const FmllrGatherWindow w = windows[blockIdx.y];
  const int row = blockIdx.x;
  if (row >= w.rows) return;
  extern __shared__ double shared[];
  double* gamma = shared;                    // kTermsWarps x max_gaussians
  double* warp_terms = gamma + kTermsWarps * max_gaussians;  // kTermsWarps x (1 + 2 dim)
  __shared__ double y[kMaxGatherDim];
  __shared__ float max_scratch[kTermsWarps];
  __shared__ double sum_scratch[kTermsWarps];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int term_count = 1 + 2 * dim;
  double* out = w.terms + static_cast<int64_t>(row) * term_count;
  const float* scores = w.scores + static_cast<int64_t>(row) * w.num_states;

  float best = -INFINITY;
  for (int s = tid; s < w.num_states; s += kTermsThreads) best = fmaxf(best, scores[s]);
  best = BlockMax(best, max_scratch);
  if (!isfinite(best)) {  // as PairsFromScores: no pairs for the frame
    for (int k = tid; k < term_count; k += kTermsThreads) out[k] = 0.0;
    return;
  }
  const double floor = static_cast<double>(best) - kNegligiblePosteriorNats;
  double total = 0.0;
  for (int s = tid; s < w.num_states; s += kTermsThreads) {
    const double v = scores[s];
    if (v >= floor) total += exp(v - static_cast<double>(best));
  }
  total = BlockSum(total, sum_scratch);
  const double log_total = static_cast<double>(best) + log(total);

  const float* x = w.frames + static_cast<int64_t>(row) * dim;
  for (int d = tid; d < dim; d += kTermsThreads) {
    y[d] = static_cast<double>(x[d]) - static_cast<double>(w.center[d]);
  }
  __syncthreads();
  // Each warp scans its own states and takes the states it keeps itself, one
  // after another (a ballot, then the whole warp on each): no block-wide
  // list, so no barrier per tile of states.
  double a[2] = {0.0, 0.0}, b[2] = {0.0, 0.0}, beta = 0.0, silence_mass = 0.0;
  double* my_gamma = gamma + warp * max_gaussians;
  for (int base = warp * 32; base < w.num_states; base += kTermsThreads) {
    const int s = base + lane;
    bool keep = false;
    float weight = 0.0f;
    if (s < w.num_states) {
      const double v = scores[s];
      if (v >= floor) {
        const double posterior = exp(v - log_total);
        if (w.silence != nullptr && w.silence[s] != 0) {
          silence_mass += posterior;
        } else if (posterior >= w.min_posterior && posterior > 0.0) {
          keep = true;
          weight = static_cast<float>(posterior);  // as the host's StatsPair
        }
      }
    }
    for (unsigned kept = __ballot_sync(kFullMask, keep); kept != 0; kept &= kept - 1) {
      const int source = __ffs(kept) - 1;
      const int state = __shfl_sync(kFullMask, s, source);
      const float state_weight = __shfl_sync(kFullMask, weight, source);
      AddStateTerms(w, dim, state, state_weight, y, my_gamma, a, b);
      if (lane == 0) beta += state_weight;
    }
  }
  silence_mass = BlockSum(silence_mass, sum_scratch);
  const bool skipped = w.silence_threshold > 0.0 && silence_mass >= w.silence_threshold;
  double* mine = warp_terms + warp * term_count;
  if (lane == 0) mine[0] = beta;
  for (int h = 0; h < 2; ++h) {
    const int d = lane + 32 * h;
    if (d < dim) {
      mine[1 + d] = a[h];
      mine[1 + dim + d] = b[h];
    }
  }
  __syncthreads();
  for (int k = tid; k < term_count; k += kTermsThreads) {
    double v = 0.0;
    for (int ww = 0; ww < kTermsWarps; ++ww) v += warp_terms[ww * term_count + k];
    out[k] = skipped ? 0.0 : v;
  }
}

// Block (entries blockIdx.x * kGramEntriesPerBlock .., window blockIdx.y):
// its entries of the sums over every frame of the window, in tiles of
// `tile` frames, then one atomic add each.
__global__ void FmllrGramKernel(const FmllrGatherWindow* windows, int dim, int tile) {
  const FmllrGatherWindow w = windows[blockIdx.y];
  if (w.rows == 0) return;
  const int ext = dim + 1;
  const int packed = ext * (ext + 1) / 2;
  const int term_count = 1 + 2 * dim;
  const int64_t entries = 1 + static_cast<int64_t>(dim) * ext + static_cast<int64_t>(dim) * packed;
  extern __shared__ double shared[];
  double* xt = shared;                   // tile x ext
  double* tt = xt + tile * ext;          // tile x term_count
  int* pair_of = reinterpret_cast<int*>(tt + tile * term_count);  // packed: p | q << 8
  const int tid = threadIdx.x;
  for (int pq = tid; pq < packed; pq += kGramThreads) {
    int p = 0;
    while (p + 1 < ext && (p + 1) * ext - (p + 1) * p / 2 <= pq) ++p;
    const int q = p + (pq - (p * ext - p * (p - 1) / 2));
    pair_of[pq] = p | (q << 8);
  }
  // Each entry: kind 0 beta, 1 K[i][p], 2 G_i[p][q].
  int kind[kGramEntriesPerThread], ii[kGramEntriesPerThread], pp[kGramEntriesPerThread],
      qq[kGramEntriesPerThread];
  int64_t entry[kGramEntriesPerThread];
  double acc[kGramEntriesPerThread];
  __syncthreads();
  for (int k = 0; k < kGramEntriesPerThread; ++k) {
    const int64_t e = static_cast<int64_t>(blockIdx.x) * kGramEntriesPerBlock + k * kGramThreads + tid;
    entry[k] = e;
    acc[k] = 0.0;
    kind[k] = -1;
    ii[k] = pp[k] = qq[k] = 0;
    if (e >= entries) continue;
    if (e == 0) {
      kind[k] = 0;
    } else if (e < 1 + static_cast<int64_t>(dim) * ext) {
      kind[k] = 1;
      ii[k] = static_cast<int>((e - 1) / ext);
      pp[k] = static_cast<int>((e - 1) % ext);
    } else {
      const int64_t g = e - 1 - static_cast<int64_t>(dim) * ext;
      kind[k] = 2;
      ii[k] = static_cast<int>(g / packed);
      const int pq = pair_of[g % packed];
      pp[k] = pq & 0xff;
      qq[k] = pq >> 8;
    }
  }
  for (int t0 = 0; t0 < w.rows; t0 += tile) {
    const int nt = min(tile, w.rows - t0);
    __syncthreads();
    for (int k = tid; k < nt * ext; k += kGramThreads) {
      const int t = k / ext, p = k % ext;
      xt[k] = p < dim ? static_cast<double>(w.frames[static_cast<int64_t>(t0 + t) * dim + p]) : 1.0;
    }
    const double* terms = w.terms + static_cast<int64_t>(t0) * term_count;
    for (int k = tid; k < nt * term_count; k += kGramThreads) tt[k] = terms[k];
    __syncthreads();
    for (int k = 0; k < kGramEntriesPerThread; ++k) {
      double s = 0.0;
      switch (kind[k]) {
        case 0:
          for (int t = 0; t < nt; ++t) s += tt[t * term_count];
          break;
        case 1:
          for (int t = 0; t < nt; ++t) s += tt[t * term_count + 1 + dim + ii[k]] * xt[t * ext + pp[k]];
          break;
        case 2:
          for (int t = 0; t < nt; ++t) {
            s += tt[t * term_count + 1 + ii[k]] * xt[t * ext + pp[k]] * xt[t * ext + qq[k]];
          }
          break;
        default:
          break;
      }
      acc[k] += s;
    }
  }
  for (int k = 0; k < kGramEntriesPerThread; ++k) {
    if (kind[k] >= 0 && acc[k] != 0.0) atomicAdd(w.sums + entry[k], acc[k]);
  }
}

}  // namespace

absl::Status LaunchFmllrGather(const FmllrGatherWindow* windows, int count, int dim, int max_rows,
                               int max_gaussians, cudaStream_t stream) {
  if (count == 0 || max_rows == 0) return absl::OkStatus();
  if (dim < 1 || dim > kMaxGatherDim || max_gaussians < 1 || max_gaussians > kMaxGatherGaussians) {
    return absl::InvalidArgumentError(absl::StrCat("fMLLR gathering takes dimensions 1 .. ",
                                                   kMaxGatherDim, " and 1 .. ", kMaxGatherGaussians,
                                                   " Gaussians a state, not ", dim, " and ",
                                                   max_gaussians));
  }
  const int term_count = 1 + 2 * dim;
  const size_t terms_shared =
      sizeof(double) * static_cast<size_t>(kTermsWarps) * (max_gaussians + term_count);
  if (terms_shared > 48 * 1024) {
    GMM_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(FmllrTermsKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(terms_shared)),
        "allow the fMLLR terms kernel its shared memory");
  }
  FmllrTermsKernel<<<dim3(max_rows, count), kTermsThreads, terms_shared, stream>>>(windows, dim,
                                                                                 max_gaussians);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fMLLR terms kernel");

  const int ext = dim + 1;
  const int packed = ext * (ext + 1) / 2;
  const int64_t entries = 1 + static_cast<int64_t>(dim) * ext + static_cast<int64_t>(dim) * packed;
  const size_t per_frame = sizeof(double) * (ext + term_count);
  const size_t table = sizeof(int) * packed;
  const int tile = static_cast<int>(std::clamp<size_t>((kGramSharedBytes - table) / per_frame, 1, 32));
  const size_t gram_shared = table + per_frame * tile;
  const int blocks = static_cast<int>((entries + kGramEntriesPerBlock - 1) / kGramEntriesPerBlock);
  FmllrGramKernel<<<dim3(blocks, count), kGramThreads, gram_shared, stream>>>(windows, dim, tile);
  GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch fMLLR gram kernel");
  return absl::OkStatus();
}

}  // namespace gmmscore
