// Row-major float matrices: an owning FloatMatrix and a non-owning view.
//
//   FloatMatrix features(num_frames, dim);
//   features.row(t)[d] = 1.0f;
//   ConstMatrixView view = features.view();
#ifndef GMMSCORE_KERNELS_CORE_MATRIX_H_
#define GMMSCORE_KERNELS_CORE_MATRIX_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "kernels/core/block_array.h"

namespace gmmscore {

// Non-owning view of `rows` x `cols` floats stored row-major, with rows
// `stride` floats apart (stride >= cols). The caller keeps the data alive.
struct ConstMatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;

  ConstMatrixView() = default;
  ConstMatrixView(const float* data_in, int64_t rows_in, int64_t cols_in)
      : data(data_in), rows(rows_in), cols(cols_in), stride(cols_in) {}
  ConstMatrixView(const float* data_in, int64_t rows_in, int64_t cols_in, int64_t stride_in)
      : data(data_in), rows(rows_in), cols(cols_in), stride(stride_in) {}

  const float* row(int64_t r) const { return data + r * stride; }
  float at(int64_t r, int64_t c) const { return data[r * stride + c]; }
  // Rows [first, first + count) of this view.
  ConstMatrixView Rows(int64_t first, int64_t count) const {
    return ConstMatrixView(data + first * stride, count, cols, stride);
  }
};

// Owning row-major matrix with contiguous rows (stride == cols).
//
// Its storage is its own vector, or a block it shares the ownership of
// (OnBlock): the CUDA backend hands out scores whose floats are the pinned
// block the GPU copied them into, so that nothing copies them again on
// their way to the answer (kernels/cuda/pinned_block_pool.h). Either way
// it behaves as a value: a copy is a deep copy into a vector of its own.
class FloatMatrix {
 public:
  FloatMatrix() = default;
  FloatMatrix(int64_t rows, int64_t cols, float fill = 0.0f)
      : rows_(rows), cols_(cols), data_(Floats::Vector(static_cast<size_t>(rows * cols), fill)) {}
  // A rows x cols matrix whose floats are block.get()[0, rows * cols): the
  // matrix holds `block` (its owner is released with the matrix) and is
  // the only one to write through it.
  static FloatMatrix OnBlock(std::shared_ptr<float> block, int64_t rows, int64_t cols) {
    FloatMatrix matrix;
    matrix.rows_ = rows;
    matrix.cols_ = cols;
    matrix.data_ = Floats::OnBlock(std::move(block), static_cast<size_t>(rows * cols));
    return matrix;
  }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool empty() const { return data_.empty(); }
  // Its floats live in a shared block (OnBlock), not in a vector of its own.
  bool on_block() const { return data_.on_block(); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float* row(int64_t r) { return data() + r * cols_; }
  const float* row(int64_t r) const { return data() + r * cols_; }
  float& at(int64_t r, int64_t c) { return data()[r * cols_ + c]; }
  float at(int64_t r, int64_t c) const { return data()[r * cols_ + c]; }

  absl::Span<float> span() { return absl::MakeSpan(data(), data_.size()); }
  absl::Span<const float> span() const { return absl::MakeConstSpan(data(), data_.size()); }
  ConstMatrixView view() const { return ConstMatrixView(data(), rows_, cols_); }

  // Reshapes without preserving contents, which are unspecified afterwards
  // (not zeroed: write every element, or Fill); keeps the allocation when
  // it fits. A matrix on a block leaves it for a vector of its own.
  void Resize(int64_t rows, int64_t cols) {
    if (data_.on_block()) data_ = Floats();
    rows_ = rows;
    cols_ = cols;
    data_.resize(static_cast<size_t>(rows * cols));
  }
  void Fill(float value) { std::fill(data_.begin(), data_.end(), value); }

  friend bool operator==(const FloatMatrix& a, const FloatMatrix& b) {
    return a.rows_ == b.rows_ && a.cols_ == b.cols_ && a.data_ == b.data_;
  }

 private:
  using Floats = BlockArray<float, DefaultInitAllocator<float>>;

  int64_t rows_ = 0;
  int64_t cols_ = 0;
  Floats data_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_MATRIX_H_
