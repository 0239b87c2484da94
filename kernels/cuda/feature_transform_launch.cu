#include "kernels/cuda/feature_transform_launch.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loglik_policy.h"

namespace gmmscore {
namespace {

constexpr int kThreads = 256;
// Enough blocks per window to fill the GPU for long windows; a 10-frame
// chunk of D = 39 is 390 values, two blocks.
constexpr int64_t kMaxBlocksPerSegment = 64;
// Windows run along gridDim.y; more go in further launches.
constexpr int kMaxSegmentsPerLaunch = static_cast<int>(kMaxGridDimYZ);

// One thread per output value; the window is blockIdx.y. The D x D products
// are a few thousand per frame: memory and launch latency dominate, so plain
// float64 FMAs (exact products of floats, one rounding at the end) cost
// nothing measurable and match the host path.
__global__ void FeatureTransformKernel(const float* __restrict__ in, float* __restrict__ out,
                                       const float* __restrict__ matrices,
                                       const TransformSegment* __restrict__ segments) {
  const TransformSegment segment = segments[blockIdx.y];
  const int dim = static_cast<int>(segment.dim);
  const int64_t cells = segment.rows * dim;
  const float* transposed = matrices + (segment.matrix == TransformSegment::kCopy ? 0 : segment.matrix);
  const float* offset = transposed + static_cast<int64_t>(dim) * dim;
  for (int64_t cell = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; cell < cells;
       cell += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = cell / dim;
    const int d = static_cast<int>(cell - row * dim);
    const float* x = in + segment.first + row * dim;
    if (segment.matrix == TransformSegment::kCopy) {
      out[segment.first + cell] = x[d];
      continue;
    }
    double sum = offset[d];
    for (int k = 0; k < dim; ++k) {
      sum = fma(static_cast<double>(transposed[static_cast<int64_t>(k) * dim + d]),
                static_cast<double>(x[k]), sum);
    }
    out[segment.first + cell] = static_cast<float>(sum);
  }
}

}  // namespace

void PackTransform(const FeatureTransform& transform, float* out) {
  const int dim = transform.dim();
  const auto linear = transform.linear();
  for (int d = 0; d < dim; ++d) {
    for (int k = 0; k < dim; ++k) {
      out[static_cast<int64_t>(k) * dim + d] = static_cast<float>(linear[static_cast<size_t>(d) * dim + k]);
    }
  }
  const auto offset = transform.offset();
  for (int d = 0; d < dim; ++d) out[static_cast<int64_t>(dim) * dim + d] = static_cast<float>(offset[d]);
}

absl::Status LaunchFeatureTransforms(const float* in, float* out, const float* matrices,
                                     const TransformSegment* segments, int num_segments,
                                     int64_t max_values, cudaStream_t stream) {
  if (num_segments <= 0 || max_values <= 0) return absl::OkStatus();
  const int64_t blocks =
      std::min<int64_t>(kMaxBlocksPerSegment, (max_values + kThreads - 1) / kThreads);
  for (int first = 0; first < num_segments; first += kMaxSegmentsPerLaunch) {
    const int count = std::min(kMaxSegmentsPerLaunch, num_segments - first);
    FeatureTransformKernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(count)),
                             kThreads, 0, stream>>>(in, out, matrices, segments + first);
    GMM_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch feature transform kernel");
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
