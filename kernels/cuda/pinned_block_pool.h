// PinnedBlockPool: page-locked host blocks of one size, shared by the
// results that read them and back in the pool when the last one lets go.
//
// Why: a dense float32 answer of a 5000-state model is 20 KB a frame. The
// lane copied it by DMA into its own pinned buffer and then, on the host,
// into each window's result: 1.7 to 2.3 of a lane's 3.1 to 4.0 us a frame
// on an H100 (docs/PERFORMANCE.md, "Dense scores on pinned blocks"). With
// a pool, the DMA lands in blocks that the results keep
// (FloatMatrix::OnBlock) until gRPC has sent them, and the host copies
// nothing (scores_blocks.h places a call's windows in blocks).
//
//   auto pool = PinnedBlockPool::Create(8 << 20, 256, PinnedBlockPool::CudaPinned());
//   std::shared_ptr<float> block = pool->Take();  // null: copy as before
//   cudaMemcpyAsync(block.get(), device, bytes, cudaMemcpyDeviceToHost, stream);
//   result.loglikes = FloatMatrix::OnBlock(
//       std::shared_ptr<float>(block, block.get() + offset), rows, cols);
//
// One size, made on demand up to max_blocks (or up front: Create's
// made_now) and never freed while the pool lives. The daemon makes them all
// up front: a block made under load takes milliseconds of cudaHostAlloc on
// a lane, and a two-GPU daemon's lanes stalled at its start while their
// pools grew (docs/PERFORMANCE.md, "Pinned blocks made at start, two GPUs
// on a 32-core host"). And: an earlier pool of power-of-two sizes freed idle blocks of one
// size to make another as batches grew and shrank, and each cudaFreeHost /
// cudaHostAlloc pair (milliseconds, the free waiting for the device) held
// the daemon's lanes; at 3500 streams its 4096-frame batches took 34 ms.
// A block is held by every result made on it, so one answer gRPC has not
// yet sent keeps its block; max_blocks is what keeps that bounded.
//
// Thread safety: Take, stats() and the blocks' release on any threads.
// Blocks keep the pool alive; it frees its blocks when the last goes.
#ifndef GMMSCORE_KERNELS_CUDA_PINNED_BLOCK_POOL_H_
#define GMMSCORE_KERNELS_CUDA_PINNED_BLOCK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gmmscore {

class PinnedBlockPool : public std::enable_shared_from_this<PinnedBlockPool> {
 public:
  // How blocks are made and given back. allocate returns null on failure.
  struct Allocator {
    std::function<void*(size_t bytes)> allocate;
    std::function<void(void* block)> free;
  };
  // cudaHostAlloc (portable: usable from every device's streams) and
  // cudaFreeHost.
  static Allocator CudaPinned();

  // Blocks of block_bytes (a multiple of sizeof(float), at least one
  // float), at most max_blocks of them. The first made_now (at most
  // max_blocks) are made here, the rest when Take finds none idle. Where
  // the allocator refuses one of those made here, the pool keeps the blocks
  // it made as its bound (max_blocks()): Take never tries again under load.
  static std::shared_ptr<PinnedBlockPool> Create(size_t block_bytes, int64_t max_blocks,
                                                 Allocator allocator, int64_t made_now = 0);
  ~PinnedBlockPool();

  PinnedBlockPool(const PinnedBlockPool&) = delete;
  PinnedBlockPool& operator=(const PinnedBlockPool&) = delete;

  size_t block_bytes() const { return block_bytes_; }
  int64_t block_floats() const { return static_cast<int64_t>(block_bytes_ / sizeof(float)); }
  int64_t max_blocks() const { return max_blocks_; }

  // A block (its contents unspecified), back in the pool when the returned
  // pointer and every copy and alias of it are gone. Null when max_blocks
  // are in use, or the allocator failed.
  std::shared_ptr<float> Take();

  struct Stats {
    int64_t blocks = 0;   // made and not freed: idle or in use
    int64_t in_use = 0;   // taken and not yet back
    int64_t taken = 0;    // Take calls that returned a block
    int64_t refused = 0;  // Take calls that returned null (made none, or all in use)
  };
  Stats stats() const;

 private:
  PinnedBlockPool(size_t block_bytes, int64_t max_blocks, Allocator allocator);
  void Give(void* block);

  const size_t block_bytes_;
  int64_t max_blocks_;  // set before the pool is shared (Create), then read-only
  const Allocator allocator_;
  mutable std::mutex mu_;
  std::vector<void*> idle_;  // guarded by mu_
  Stats stats_;              // guarded by mu_
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_PINNED_BLOCK_POOL_H_
