// The speaker feature transform y = A x + b on the device, for every window
// of a batch that carries one (ScoreWindow::transform), in one launch on the
// caller's stream.
//
// The host packs, after the features in the same pinned buffer, each distinct
// transform once as A transposed (D x D, A^T[k][d] = A[d][k], so that the
// threads of a warp read consecutive floats) followed by b (D): see
// PackTransform. Sums are float64, rounded once, like the host path
// (FeatureTransform::ApplyUnchecked).
#ifndef GMMSCORE_KERNELS_CUDA_FEATURE_TRANSFORM_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_FEATURE_TRANSFORM_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/score/feature_transform.h"

namespace gmmscore {

// One window to transform; offsets count floats from the buffers' starts.
struct TransformSegment {
  static constexpr int64_t kCopy = -1;  // `matrix` of a window copied as it is
  int64_t first = 0;   // the window's first feature value (same offset in `out`)
  int64_t rows = 0;    // frames
  int64_t matrix = 0;  // its packed A^T and b, or kCopy
  int64_t dim = 0;     // D (windows of different models differ)
};

// Floats PackTransform writes: D x D + D.
inline int64_t PackedTransformFloats(int dim) { return static_cast<int64_t>(dim) * dim + dim; }

// Writes A^T then b to `out` (PackedTransformFloats(transform.dim()) floats).
// Lossless: the transform's values are widened floats.
void PackTransform(const FeatureTransform& transform, float* out);

// out[seg.first + t*D + d] = b[d] + sum_k A[d][k] in[seg.first + t*D + k]
// for every segment, row t < seg.rows and d < D = seg.dim (a plain copy for
// kCopy segments). `in`, `out`,
// `matrices` and `segments` are device memory; `out` must not alias `in`.
// `max_values` is the largest seg.rows * seg.dim (sizes the grid).
absl::Status LaunchFeatureTransforms(const float* in, float* out, const float* matrices,
                                     const TransformSegment* segments, int num_segments,
                                     int64_t max_values, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_FEATURE_TRANSFORM_LAUNCH_H_
