#include "kernels/score/feature_transform_reference.h"

namespace gmmscore {

std::vector<double> ReferenceTransform(int rows, int cols, absl::Span<const float> values,
                                       ConstMatrixView in) {
  std::vector<double> out(in.rows * rows);
  for (int64_t t = 0; t < in.rows; ++t) {
    for (int i = 0; i < rows; ++i) {
      double y = cols == rows + 1 ? values[i * cols + rows] : 0.0;
      for (int j = 0; j < rows; ++j) {
        y += static_cast<double>(values[i * cols + j]) * static_cast<double>(in.at(t, j));
      }
      out[t * rows + i] = y;
    }
  }
  return out;
}

}  // namespace gmmscore
