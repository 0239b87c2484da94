#include "client/load/pacer.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "absl/synchronization/notification.h"
#include "client/load/load_stats.h"
#include "gtest/gtest.h"

namespace gmmscore::load {
namespace {

// 50 paced senders, one tick every 20 ms for 10 ticks, phases spread over
// the period (what LoadRunner does with real-time streams): no tick runs
// early, and the lateness stays within a few milliseconds even on a busy
// shared machine (the bound is loose on purpose; a typical p99 is < 1 ms).
TEST(PacerTest, TicksOnTime) {
  constexpr int kSenders = 50, kTicks = 10;
  constexpr int64_t kPeriod = 20'000'000;
  Pacer pacer(1);
  std::mutex mu;
  std::vector<double> lateness_ms;
  std::vector<std::vector<int64_t>> run_at(kSenders);
  absl::Notification all_done;
  int remaining = kSenders;
  const int64_t t0 = NowNs() + 10'000'000;

  // Each tick records when it ran and schedules the next from its own due
  // time (not from when it ran), as LoadStream does: no drift.
  struct Sender {
    std::function<void(int, int64_t)> tick;
  };
  std::vector<Sender> senders(kSenders);
  for (int s = 0; s < kSenders; ++s) {
    senders[s].tick = [&, s](int k, int64_t due) {
      const int64_t now = NowNs();
      bool last;
      {
        std::lock_guard<std::mutex> lock(mu);
        lateness_ms.push_back((now - due) * 1e-6);
        run_at[s].push_back(due);
        last = k + 1 == kTicks && --remaining == 0;
      }
      if (k + 1 < kTicks) {
        pacer.Schedule(due + kPeriod, [&, s, k, due] { senders[s].tick(k + 1, due + kPeriod); });
      }
      if (last) all_done.Notify();
    };
    const int64_t first = t0 + kPeriod * s / kSenders;
    pacer.Schedule(first, [&, s, first] { senders[s].tick(0, first); });
  }
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_EQ(lateness_ms.size(), static_cast<size_t>(kSenders * kTicks));
  EXPECT_GE(*std::min_element(lateness_ms.begin(), lateness_ms.end()), 0.0) << "a tick ran early";
  const double p50 = Percentile(lateness_ms, 50), p99 = Percentile(lateness_ms, 99);
  std::printf("pacer lateness: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", p50, p99,
              Percentile(lateness_ms, 100));
  EXPECT_LT(p50, 2.0);
  EXPECT_LT(p99, 15.0);
  for (const auto& times : run_at) {
    for (size_t k = 1; k < times.size(); ++k) EXPECT_EQ(times[k] - times[k - 1], kPeriod);
  }
}

TEST(PacerTest, SameTimeRunsInOrderAndPastRunsAtOnce) {
  Pacer pacer(1);
  std::mutex mu;
  std::vector<int> order;
  absl::Notification done;
  const int64_t at = NowNs() + 5'000'000;
  for (int i = 0; i < 5; ++i) {
    pacer.Schedule(at, [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  pacer.Schedule(at, [&] { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(order, std::vector<int>({0, 1, 2, 3, 4}));

  absl::Notification past;
  const int64_t before = NowNs();
  pacer.Schedule(before - 1'000'000'000, [&] { past.Notify(); });
  ASSERT_TRUE(past.WaitForNotificationWithTimeout(absl::Seconds(1)));
  EXPECT_LT(NowNs() - before, 100'000'000);
}

TEST(PacerTest, DestructorRunsWhatIsLeft) {
  std::atomic<int> ran{0};
  {
    Pacer pacer(2);
    for (int i = 0; i < 4; ++i) pacer.Schedule(NowNs() + 60'000'000'000, [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 4);
}

}  // namespace
// A wall-clock stamp of this host comes back on the run's clock: now is
// now, and microseconds apart stay microseconds apart.
TEST(RunClockTest, WallClockStampsComeBackOnTheRunsClock) {
  for (int i = 0; i < 3; ++i) {
    const int64_t wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    const int64_t run_ns = NowNs();
    // Within a millisecond: the two reads above, and the stamp's rounding.
    EXPECT_NEAR(static_cast<double>(RunNsOfUnixMicros(wall_us)), static_cast<double>(run_ns), 1e6);
    EXPECT_EQ(RunNsOfUnixMicros(wall_us + 250) - RunNsOfUnixMicros(wall_us), 250'000);
  }
}

}  // namespace gmmscore::load
