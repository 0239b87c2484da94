// The float64 reference for feature_transform.h, for tests only.
//
//   std::vector<double> y = ReferenceTransform(39, 40, values, features.view());
#ifndef GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_REFERENCE_H_
#define GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_REFERENCE_H_

#include <vector>

#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

// T x D row-major y_t = A x_t + b for the rows x cols matrix `values`
// (cols = rows + 1: [A | b]; cols = rows: A). Expects in.cols == rows.
std::vector<double> ReferenceTransform(int rows, int cols, absl::Span<const float> values,
                                       ConstMatrixView in);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FEATURE_TRANSFORM_REFERENCE_H_
