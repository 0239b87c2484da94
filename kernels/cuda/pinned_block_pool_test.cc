// PinnedBlockPool's bookkeeping, over a counting host allocator: no GPU.
#include "kernels/cuda/pinned_block_pool.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

constexpr size_t kBlockBytes = size_t{1} << 20;

// malloc and free, counted; allocate fails while `fail` is set.
struct CountingAllocator {
  std::atomic<int> live{0}, made{0};
  std::atomic<bool> fail{false};
  PinnedBlockPool::Allocator Get() {
    return {.allocate =
                [this](size_t bytes) -> void* {
                  if (fail) return nullptr;
                  ++live;
                  ++made;
                  return std::malloc(bytes);
                },
            .free =
                [this](void* block) {
                  --live;
                  std::free(block);
                }};
  }
};

TEST(PinnedBlockPoolTest, ABlockGivenBackIsTakenAgainNotMadeAgain) {
  CountingAllocator counting;
  auto pool = PinnedBlockPool::Create(kBlockBytes, 4, counting.Get());
  EXPECT_EQ(pool->block_floats(), static_cast<int64_t>(kBlockBytes / sizeof(float)));
  float* first = nullptr;
  {
    std::shared_ptr<float> block = pool->Take();
    ASSERT_NE(block, nullptr);
    first = block.get();
    std::memset(block.get(), 0x7f, kBlockBytes);  // the whole block is there
    EXPECT_EQ(pool->stats().in_use, 1);
  }
  EXPECT_EQ(pool->stats().in_use, 0);
  EXPECT_EQ(pool->stats().blocks, 1);
  std::shared_ptr<float> again = pool->Take();
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(counting.made, 1);
  EXPECT_EQ(pool->stats().taken, 2);
}

// Blocks made up front are taken without making more; past them, and past
// one the allocator could not make up front, blocks are made on demand up to
// the bound.
TEST(PinnedBlockPoolTest, BlocksMadeUpFrontAreTakenWithoutMakingMore) {
  CountingAllocator counting;
  auto pool = PinnedBlockPool::Create(kBlockBytes, 3, counting.Get(), /*made_now=*/2);
  EXPECT_EQ(counting.made, 2);
  EXPECT_EQ(pool->stats().blocks, 2);
  EXPECT_EQ(pool->stats().in_use, 0);
  std::shared_ptr<float> a = pool->Take(), b = pool->Take();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(counting.made, 2);
  std::shared_ptr<float> c = pool->Take();  // the third, on demand
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(counting.made, 3);
  EXPECT_EQ(pool->Take(), nullptr);
  EXPECT_EQ(pool->stats().refused, 1);

  // More than the bound asked up front: the bound.
  CountingAllocator bounded;
  EXPECT_EQ(PinnedBlockPool::Create(kBlockBytes, 2, bounded.Get(), 5)->stats().blocks, 2);
  EXPECT_EQ(bounded.made, 2);

  // An allocator that refuses up front: what was made is the bound, and
  // Take does not try again.
  CountingAllocator failing;
  failing.fail = true;
  auto refused = PinnedBlockPool::Create(kBlockBytes, 2, failing.Get(), 2);
  EXPECT_EQ(refused->stats().blocks, 0);
  EXPECT_EQ(refused->max_blocks(), 0);
  failing.fail = false;
  EXPECT_EQ(refused->Take(), nullptr);
  EXPECT_EQ(failing.made, 0);
  EXPECT_EQ(refused->stats().refused, 1);

  // Made up front none: blocks on demand, freed with the pool.
  CountingAllocator lazy_counting;
  auto lazy = PinnedBlockPool::Create(kBlockBytes, 2, lazy_counting.Get());
  EXPECT_EQ(lazy->stats().blocks, 0);
  EXPECT_NE(lazy->Take(), nullptr);
  EXPECT_EQ(lazy_counting.made, 1);
  lazy.reset();
  EXPECT_EQ(lazy_counting.live, 0);  // the block went back and the pool freed it
}

// A host that pins some blocks and then refuses: the ones made are kept and
// are the bound.
TEST(PinnedBlockPoolTest, APartialUpFrontMakingIsTheBound) {
  CountingAllocator counting;
  int calls = 0;
  PinnedBlockPool::Allocator allocator = counting.Get();
  PinnedBlockPool::Allocator third_refused{
      .allocate = [&, inner = allocator.allocate](size_t bytes) { return ++calls == 3 ? nullptr : inner(bytes); },
      .free = allocator.free};
  auto pool = PinnedBlockPool::Create(kBlockBytes, 5, third_refused, 5);
  EXPECT_EQ(pool->stats().blocks, 2);
  EXPECT_EQ(pool->max_blocks(), 2);
  std::shared_ptr<float> a = pool->Take(), b = pool->Take();
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(pool->Take(), nullptr);
  EXPECT_EQ(calls, 3);  // no try under load
}

TEST(PinnedBlockPoolTest, NoMoreThanMaxBlocksAreInUseAndARefusalIsCounted) {
  CountingAllocator counting;
  auto pool = PinnedBlockPool::Create(kBlockBytes, 2, counting.Get());
  std::shared_ptr<float> a = pool->Take();
  std::shared_ptr<float> b = pool->Take();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool->Take(), nullptr);
  EXPECT_EQ(pool->stats().refused, 1);
  a.reset();
  EXPECT_NE(pool->Take(), nullptr);  // a's block, idle again
  EXPECT_EQ(counting.made, 2);
  EXPECT_EQ(pool->stats().blocks, 2);
}

TEST(PinnedBlockPoolTest, AFailedAllocationGivesNullAndHoldsNothing) {
  CountingAllocator counting;
  counting.fail = true;
  auto pool = PinnedBlockPool::Create(kBlockBytes, 2, counting.Get());
  EXPECT_EQ(pool->Take(), nullptr);
  EXPECT_EQ(pool->stats().blocks, 0);
  EXPECT_EQ(pool->stats().in_use, 0);
  EXPECT_EQ(pool->stats().refused, 1);
  counting.fail = false;
  EXPECT_NE(pool->Take(), nullptr);
  EXPECT_NE(pool->Take(), nullptr);  // the failure took no place
}

TEST(PinnedBlockPoolTest, AnAliasKeepsTheBlockAndTheBlockKeepsThePool) {
  CountingAllocator counting;
  std::shared_ptr<float> alias;
  {
    auto pool = PinnedBlockPool::Create(kBlockBytes, 2, counting.Get());
    std::shared_ptr<float> block = pool->Take();
    alias = std::shared_ptr<float>(block, block.get() + 1000);  // a window's scores
  }
  alias.get()[0] = 1.0f;  // the block is still there without the pool's handle
  EXPECT_EQ(counting.live, 1);
  alias.reset();  // the last holder: the block goes back and the pool frees it
  EXPECT_EQ(counting.live, 0);
}

TEST(PinnedBlockPoolTest, ConcurrentTakesStayUnderTheBoundAndNeverShareABlock) {
  CountingAllocator counting;
  auto pool = PinnedBlockPool::Create(kBlockBytes, 6, counting.Get());
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(std::random_device{}());
      std::vector<std::shared_ptr<float>> held;
      for (int i = 0; i < 3000; ++i) {
        if (!held.empty() && rng() % 2 == 0) {
          held.erase(held.begin() + rng() % held.size());
          continue;
        }
        std::shared_ptr<float> block = pool->Take();
        if (block == nullptr) continue;
        // A block is this thread's alone: another writer would change it.
        const float mark = static_cast<float>(t * 100000 + i);
        block.get()[0] = mark;
        std::this_thread::yield();
        if (block.get()[0] != mark) ++overlaps;
        held.push_back(std::move(block));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(overlaps, 0);
  const PinnedBlockPool::Stats stats = pool->stats();
  EXPECT_EQ(stats.in_use, 0);
  EXPECT_LE(stats.blocks, 6);
  EXPECT_EQ(counting.live, stats.blocks);
  EXPECT_GT(stats.taken, 0);
}

}  // namespace
}  // namespace gmmscore
