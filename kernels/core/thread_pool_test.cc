#include "kernels/core/thread_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// Runs a loop of `count` on `pool` and checks every index ran exactly once.
void ExpectEachIndexOnce(ThreadPool& pool, int64_t count) {
  std::vector<std::atomic<int>> runs(std::max<int64_t>(count, 0));
  pool.ParallelFor(count, [&](int64_t i) { runs[i].fetch_add(1); });
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << "index " << i;
}

TEST(ThreadPoolTest, RunsEveryIndexExactlyOnce) {
  for (int workers : {0, 1, 3}) {
    ThreadPool pool(workers);
    EXPECT_EQ(pool.num_workers(), workers);
    for (int64_t count : {0, 1, 2, 5, 1000}) ExpectEachIndexOnce(pool, count);
  }
}

TEST(ThreadPoolTest, NegativeCountsDoNothing) {
  ThreadPool pool(-2);
  EXPECT_EQ(pool.num_workers(), 0);
  bool ran = false;
  pool.ParallelFor(-1, [&](int64_t) { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(ThreadPoolTest, WithoutWorkersTheCallerDoesEverything) {
  ThreadPool pool(0);
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(10, [&](int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
}

TEST(ThreadPoolTest, WorkersShareTheLoop) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> seen;
  pool.ParallelFor(200, [&](int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  });
  EXPECT_GT(seen.size(), 1u);
}

TEST(ThreadPoolTest, ConcurrentCallersEachGetTheirWholeLoop) {
  ThreadPool pool(2);
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(kCallers, 0);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        std::atomic<int64_t> sum{0};
        pool.ParallelFor(100 + c, [&](int64_t i) { sum.fetch_add(i); });
        sums[c] += sum.load();
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int c = 0; c < kCallers; ++c) {
    const int64_t n = 100 + c;
    EXPECT_EQ(sums[c], 50 * n * (n - 1) / 2) << "caller " << c;
  }
}

TEST(ThreadPoolTest, DestroysWhileIdle) {
  for (int i = 0; i < 20; ++i) ThreadPool pool(4);
}

}  // namespace
}  // namespace gmmscore
