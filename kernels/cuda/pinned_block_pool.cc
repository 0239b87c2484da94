#include "kernels/cuda/pinned_block_pool.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

namespace gmmscore {

PinnedBlockPool::Allocator PinnedBlockPool::CudaPinned() {
  return {.allocate =
              [](size_t bytes) -> void* {
                void* block = nullptr;
                if (cudaHostAlloc(&block, bytes, cudaHostAllocPortable) != cudaSuccess) {
                  (void)cudaGetLastError();  // not sticky: the caller copies as before
                  return nullptr;
                }
                return block;
              },
          .free = [](void* block) { (void)cudaFreeHost(block); }};
}

std::shared_ptr<PinnedBlockPool> PinnedBlockPool::Create(size_t block_bytes, int64_t max_blocks,
                                                         Allocator allocator, int64_t made_now) {
  std::shared_ptr<PinnedBlockPool> pool(new PinnedBlockPool(block_bytes, max_blocks, std::move(allocator)));
  if (block_bytes < sizeof(float)) return pool;
  const int64_t wanted = std::min(made_now, max_blocks);
  std::lock_guard<std::mutex> lock(pool->mu_);  // uncontended: no one has the pool yet
  pool->idle_.reserve(static_cast<size_t>(std::max<int64_t>(wanted, 0)));
  for (int64_t i = 0; i < wanted; ++i) {
    void* block = pool->allocator_.allocate(block_bytes);
    if (block == nullptr) {
      // The host pins no more: trying again on a lane under load would
      // cost milliseconds a call and most likely fail again.
      pool->max_blocks_ = pool->stats_.blocks;
      break;
    }
    pool->idle_.push_back(block);
    ++pool->stats_.blocks;
  }
  return pool;
}

PinnedBlockPool::PinnedBlockPool(size_t block_bytes, int64_t max_blocks, Allocator allocator)
    : block_bytes_(block_bytes), max_blocks_(max_blocks), allocator_(std::move(allocator)) {}

PinnedBlockPool::~PinnedBlockPool() {
  // Every block is idle by now: each one in use holds the pool.
  for (void* block : idle_) allocator_.free(block);
}

std::shared_ptr<float> PinnedBlockPool::Take() {
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      block = idle_.back();
      idle_.pop_back();
    } else if (stats_.blocks < max_blocks_ && block_bytes_ >= sizeof(float)) {
      ++stats_.blocks;  // reserved now, made below
      // Room for every block to come back: Give runs in a deleter, where
      // an allocation that throws would terminate.
      idle_.reserve(static_cast<size_t>(stats_.blocks));
    } else {
      ++stats_.refused;
      return nullptr;
    }
    ++stats_.in_use;
    ++stats_.taken;
  }
  if (block == nullptr) {
    // Outside the lock: making page-locked memory takes milliseconds.
    block = allocator_.allocate(block_bytes_);
    if (block == nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      --stats_.blocks;
      --stats_.in_use;
      --stats_.taken;
      ++stats_.refused;
      return nullptr;
    }
  }
  return std::shared_ptr<float>(static_cast<float*>(block),
                                [self = shared_from_this()](float* released) { self->Give(released); });
}

void PinnedBlockPool::Give(void* block) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(block);
  --stats_.in_use;
}

PinnedBlockPool::Stats PinnedBlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace gmmscore
