// BlockArray<T>: an array of T that is either a vector of its own or a run
// of elements in a block it shares the ownership of (OnBlock). The CUDA
// backend hands out scores whose elements are the pinned block the GPU
// copied them into, so that nothing copies them again on their way to the
// answer (kernels/cuda/pinned_block_pool.h). It behaves as a value either
// way: a copy is a deep copy into a vector of its own.
//
//   BlockArray<uint16_t> values = std::vector<uint16_t>(n);          // owns
//   BlockArray<uint16_t> shared = BlockArray<uint16_t>::OnBlock(alias, n);
//   absl::Span<const uint16_t> view = shared;                        // either
#ifndef GMMSCORE_KERNELS_CORE_BLOCK_ARRAY_H_
#define GMMSCORE_KERNELS_CORE_BLOCK_ARRAY_H_

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace gmmscore {

// std::allocator, except that an element made without a value is left
// uninitialised: FloatMatrix::Resize (a BlockArray of it) then does not zero a matrix whose every
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

template <typename T, typename Allocator = std::allocator<T>>
class BlockArray {
 public:
  using value_type = T;
  using Vector = std::vector<T, Allocator>;

  BlockArray() = default;
  BlockArray(Vector values) : vector_(std::move(values)) {}  // NOLINT: a vector is one
  BlockArray(std::initializer_list<T> values) : vector_(values) {}
  // `size` elements from block.get(): the array holds `block` (its owner is
  // released with the array) and is the only one to write through it.
  static BlockArray OnBlock(std::shared_ptr<T> block, size_t size) {
    BlockArray array;
    array.block_ = std::move(block);
    array.block_size_ = size;
    return array;
  }

  BlockArray(const BlockArray& other) : vector_(other.begin(), other.end()) {}
  BlockArray& operator=(const BlockArray& other) {
    if (this != &other) {
      vector_.assign(other.begin(), other.end());
      Unblock();
    }
    return *this;
  }
  BlockArray(BlockArray&& other) noexcept
      : vector_(std::move(other.vector_)),
        block_(std::move(other.block_)),
        block_size_(std::exchange(other.block_size_, 0)) {}
  BlockArray& operator=(BlockArray&& other) noexcept {
    vector_ = std::move(other.vector_);
    block_ = std::move(other.block_);
    block_size_ = std::exchange(other.block_size_, 0);
    return *this;
  }

  // Its elements live in a shared block (OnBlock), not in a vector of its own.
  bool on_block() const { return block_ != nullptr; }
  size_t size() const { return block_ ? block_size_ : vector_.size(); }
  bool empty() const { return size() == 0; }
  T* data() { return block_ ? block_.get() : vector_.data(); }
  const T* data() const { return block_ ? block_.get() : vector_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

  // As a vector's; an array on a block leaves it for a vector of its own
  // (with the block's first elements, for resize).
  void resize(size_t size) {
    if (block_) {
      Vector kept(begin(), begin() + std::min(size, block_size_));
      Unblock();
      vector_ = std::move(kept);
    }
    vector_.resize(size);
  }
  template <typename Iterator>
  void assign(Iterator first, Iterator last) {
    Vector values(first, last);  // first and last may be this array's own
    Unblock();
    vector_ = std::move(values);
  }

  friend bool operator==(const BlockArray& a, const BlockArray& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void Unblock() {
    block_.reset();
    block_size_ = 0;
  }

  Vector vector_;
  std::shared_ptr<T> block_;  // set only by OnBlock; then vector_ is empty
  size_t block_size_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_BLOCK_ARRAY_H_
