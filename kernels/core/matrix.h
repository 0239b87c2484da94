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

// std::allocator, except that an element made without a value is left
// uninitialised: FloatMatrix::Resize then does not zero a matrix whose every
// element is about to be written (the daemon resizes a 200 KB result per
// chunk of a 5000-state model, and the backends fill it by copy).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
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
      : rows_(rows), cols_(cols), data_(static_cast<size_t>(rows * cols), fill) {}
  // A rows x cols matrix whose floats are block.get()[0, rows * cols): the
  // matrix holds `block` (its owner is released with the matrix) and is
  // the only one to write through it.
  static FloatMatrix OnBlock(std::shared_ptr<float> block, int64_t rows, int64_t cols) {
    FloatMatrix matrix;
    matrix.rows_ = rows;
    matrix.cols_ = cols;
    matrix.block_ = std::move(block);
    return matrix;
  }

  FloatMatrix(const FloatMatrix& other)
      : rows_(other.rows_), cols_(other.cols_), data_(other.data(), other.data() + other.size()) {}
  FloatMatrix& operator=(const FloatMatrix& other) {
    if (this == &other) return *this;
    data_.assign(other.data(), other.data() + other.size());
    block_.reset();
    rows_ = other.rows_;
    cols_ = other.cols_;
    return *this;
  }
  FloatMatrix(FloatMatrix&&) noexcept = default;
  FloatMatrix& operator=(FloatMatrix&&) noexcept = default;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool empty() const { return size() == 0; }
  // Its floats live in a shared block (OnBlock), not in a vector of its own.
  bool on_block() const { return block_ != nullptr; }

  float* data() { return block_ ? block_.get() : data_.data(); }
  const float* data() const { return block_ ? block_.get() : data_.data(); }
  float* row(int64_t r) { return data() + r * cols_; }
  const float* row(int64_t r) const { return data() + r * cols_; }
  float& at(int64_t r, int64_t c) { return data()[r * cols_ + c]; }
  float at(int64_t r, int64_t c) const { return data()[r * cols_ + c]; }

  absl::Span<float> span() { return absl::MakeSpan(data(), size()); }
  absl::Span<const float> span() const { return absl::MakeConstSpan(data(), size()); }
  ConstMatrixView view() const { return ConstMatrixView(data(), rows_, cols_); }

  // Reshapes without preserving contents, which are unspecified afterwards
  // (not zeroed: write every element, or Fill); keeps the allocation when
  // it fits. A matrix on a block leaves it for a vector of its own.
  void Resize(int64_t rows, int64_t cols) {
    block_.reset();
    rows_ = rows;
    cols_ = cols;
    data_.resize(static_cast<size_t>(rows * cols));
  }
  void Fill(float value) { std::fill(data(), data() + size(), value); }

  friend bool operator==(const FloatMatrix& a, const FloatMatrix& b) {
    return a.rows_ == b.rows_ && a.cols_ == b.cols_ && a.size() == b.size() &&
           std::equal(a.data(), a.data() + a.size(), b.data());
  }

 private:
  // Elements held: rows x cols on a block; the vector's size otherwise (a
  // moved-from matrix keeps its shape but holds nothing).
  size_t size() const { return block_ ? static_cast<size_t>(rows_ * cols_) : data_.size(); }

  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<float, DefaultInitAllocator<float>> data_;
  std::shared_ptr<float> block_;  // set only by OnBlock; then data_ is empty
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_MATRIX_H_
