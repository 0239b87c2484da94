#include "kernels/score/feature_transform.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"

namespace gmmscore {

absl::StatusOr<FeatureTransform> FeatureTransform::Create(int rows, int cols,
                                                          absl::Span<const float> values) {
  if (rows <= 0 || (cols != rows + 1 && cols != rows)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature transform is %d x %d; it must be D x (D+1) ([A | b]) or D x D", rows, cols));
  }
  if (static_cast<int64_t>(values.size()) != static_cast<int64_t>(rows) * cols) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature transform is %d x %d but has %d values", rows, cols, values.size()));
  }
  std::vector<double> linear(static_cast<size_t>(rows) * rows);
  std::vector<double> offset(rows, 0.0);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const float v = values[static_cast<size_t>(i) * cols + j];
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("feature transform value at row %d, column %d is %g", i, j, v));
      }
      if (j < rows) {
        linear[static_cast<size_t>(i) * rows + j] = v;
      } else {
        offset[i] = v;
      }
    }
  }
  return FeatureTransform(rows, std::move(linear), std::move(offset));
}

absl::Status FeatureTransform::Apply(ConstMatrixView in, FloatMatrix* out) const {
  if (in.cols != dim_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature transform is for dimension %d but the features have dimension %d", dim_,
        in.cols));
  }
  out->Resize(in.rows, dim_);
  ApplyUnchecked(in, out->data());
  return absl::OkStatus();
}

void FeatureTransform::ApplyUnchecked(ConstMatrixView in, float* out) const {
  const int dim = dim_;
  for (int64_t t = 0; t < in.rows; ++t) {
    const float* x = in.row(t);
    float* y = out + t * dim;
    for (int i = 0; i < dim; ++i) {
      const double* a = &linear_[static_cast<size_t>(i) * dim];
      double sum = offset_[i];
      for (int j = 0; j < dim; ++j) sum += a[j] * x[j];
      y[i] = static_cast<float>(sum);
    }
  }
}

}  // namespace gmmscore
