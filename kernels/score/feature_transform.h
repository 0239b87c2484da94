// A speaker-specific affine feature transform y = A x + b in Kaldi's fMLLR
// layout: a D x (D+1) matrix [A | b] (or D x D, A alone), applied to every
// frame of a stream before scoring. The float64 reference is in
// feature_transform_reference.h.
//
//   GMM_ASSIGN_OR_RETURN(FeatureTransform fmllr,
//                        FeatureTransform::Create(39, 40, values));
//   FloatMatrix transformed;
//   GMM_RETURN_IF_ERROR(fmllr.Apply(features.view(), &transformed));
//
// CPU implementation: each output value is accumulated in float64 and
// rounded once, so the result is within float32 rounding of the exact
// transform (D = 39: ~1600 multiply-adds per frame).
//
// Thread safety: immutable after creation; Apply may be called concurrently.
#ifndef GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_H_
#define GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

class FeatureTransform {
 public:
  // `values` is rows x cols row-major. cols must be rows + 1 (the last column
  // is b) or rows (b = 0); rows > 0; every value finite. INVALID_ARGUMENT
  // naming the problem otherwise.
  static absl::StatusOr<FeatureTransform> Create(int rows, int cols,
                                                 absl::Span<const float> values);

  // D: the input and output dimension.
  int dim() const { return dim_; }

  // *out = the transform of every row of `in` (in.rows x D).
  // INVALID_ARGUMENT if in.cols != dim().
  absl::Status Apply(ConstMatrixView in, FloatMatrix* out) const;

  // Writes the transform of every row of `in` (which must have dim()
  // columns) to `out`, in.rows x dim() contiguous floats. Unchecked: for
  // callers that validated already (the batch packer).
  void ApplyUnchecked(ConstMatrixView in, float* out) const;

  // A (D x D, row-major) and b (D). Every value is a float32 value widened
  // (Create takes floats), so a backend may store them as float losslessly.
  absl::Span<const double> linear() const { return linear_; }
  absl::Span<const double> offset() const { return offset_; }

 private:
  FeatureTransform(int dim, std::vector<double> linear, std::vector<double> offset)
      : dim_(dim), linear_(std::move(linear)), offset_(std::move(offset)) {}

  int dim_;
  std::vector<double> linear_;  // D x D, row-major
  std::vector<double> offset_;  // D
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_H_
