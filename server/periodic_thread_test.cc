#include "server/periodic_thread.h"

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(PeriodicThreadTest, TicksEveryPeriodUntilStopped) {
  std::atomic<int> ticks{0};
  PeriodicThread ticker("gs-test", absl::Milliseconds(2), [&] { ticks.fetch_add(1); });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (ticks.load() < 5 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_GE(ticks.load(), 5);
  ticker.Stop();
  const int stopped_at = ticks.load();
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(ticks.load(), stopped_at);  // no tick after Stop returned
  ticker.Stop();                        // again: nothing to do
}

// Stop wakes the thread: it does not wait out a long period.
TEST(PeriodicThreadTest, StopDoesNotWaitForThePeriod) {
  std::atomic<int> ticks{0};
  PeriodicThread ticker("gs-test", absl::Hours(1), [&] { ticks.fetch_add(1); });
  const absl::Time start = absl::Now();
  ticker.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(ticks.load(), 0);
}

// A tick in progress finishes before Stop returns; Stop from two threads.
TEST(PeriodicThreadTest, StopWaitsForATickInProgress) {
  std::atomic<bool> in_tick{false}, finished{false};
  PeriodicThread ticker("gs-test", absl::Milliseconds(1), [&] {
    if (finished.load()) return;
    in_tick.store(true);
    absl::SleepFor(absl::Milliseconds(50));
    finished.store(true);
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!in_tick.load() && absl::Now() < deadline) absl::SleepFor(absl::Microseconds(100));
  ASSERT_TRUE(in_tick.load());
  std::thread other([&] { ticker.Stop(); });
  ticker.Stop();
  EXPECT_TRUE(finished.load());
  other.join();
}

TEST(PeriodicThreadTest, ANonPositivePeriodStartsNothing) {
  std::atomic<int> ticks{0};
  {
    PeriodicThread never("gs-test", absl::ZeroDuration(), [&] { ticks.fetch_add(1); });
    PeriodicThread negative("gs-test", absl::Milliseconds(-1), [&] { ticks.fetch_add(1); });
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(ticks.load(), 0);
}

}  // namespace
}  // namespace gmmscore
