#include "server/server_stats.h"

#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/backends/backend_factory.h"
#include "server/batch_scheduler.h"

namespace gmmscore {
namespace {

// The scheduler's time counters move with real work, and FillServerStats
// carries every counter into the wire form unchanged.
TEST(ServerStatsTest, SchedulerTimesAndWireForm) {
  auto backend = CreateBackend("cpu");
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto model = GenerateSyntheticModel({.num_states = 50, .min_gaussians = 4, .max_gaussians = 4});
  ASSERT_TRUE(model.ok());
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(model));
  auto prepared = (*backend)->Prepare(shared);
  ASSERT_TRUE(prepared.ok());
  auto frames = std::make_shared<const FloatMatrix>(GenerateSyntheticFeatures(*shared, 20, 3));

  BatchSchedulerStats stats;
  {
    BatchScheduler scheduler(backend->get(), {});
    constexpr int kJobs = 3;
    absl::Notification all_done;
    std::atomic<int> remaining{kJobs};
    for (int i = 0; i < kJobs; ++i) {
      scheduler.Submit({.model = *prepared,
                        .features = frames,
                        .done = [&](absl::StatusOr<ScoreResult> result) {
                          EXPECT_TRUE(result.ok());
                          if (--remaining == 0) all_done.Notify();
                        }});
    }
    all_done.WaitForNotification();
    scheduler.Stop();
    stats = scheduler.stats();
  }
  EXPECT_EQ(stats.jobs, 3);
  EXPECT_EQ(stats.frames, 60);
  EXPECT_GT(stats.score_time, absl::ZeroDuration());
  EXPECT_GE(stats.queue_wait, absl::ZeroDuration());
  EXPECT_GE(stats.done_time, absl::ZeroDuration());

  stats.queue_wait = absl::Microseconds(11);
  stats.worker_wait = absl::Microseconds(12);
  stats.pack_time = absl::Microseconds(13);
  stats.score_time = absl::Microseconds(14);
  stats.done_time = absl::Microseconds(16);
  v1::GetServerStatsResponse wire;
  FillServerStats({.scheduler = stats,
                   .answers = {.answers = 7,
                               .wait = absl::Microseconds(17),
                               .send = absl::Nanoseconds(18'900)},
                   .live_streams = 4,
                   .streams_started = 9,
                   .uptime = absl::Seconds(2),
                   .device = "cpu"},
                  &wire);
  EXPECT_EQ(wire.uptime_us(), 2000000u);
  EXPECT_GT(wire.process_cpu_us(), 0u);
  EXPECT_EQ(wire.device(), "cpu");
  EXPECT_EQ(wire.live_streams(), 4u);
  EXPECT_EQ(wire.streams_started(), 9u);
  EXPECT_EQ(wire.jobs(), 3u);
  EXPECT_EQ(wire.frames(), 60u);
  EXPECT_EQ(wire.batches(), static_cast<uint64_t>(stats.group_calls));
  EXPECT_EQ(wire.dispatches(), static_cast<uint64_t>(stats.dispatches));
  EXPECT_EQ(wire.queue_wait_us(), 11u);
  EXPECT_EQ(wire.worker_wait_us(), 12u);
  EXPECT_EQ(wire.pack_us(), 13u);
  EXPECT_EQ(wire.score_us(), 14u);
  EXPECT_EQ(wire.answer_us(), 16u);
  EXPECT_EQ(wire.answers_sent(), 7u);
  EXPECT_EQ(wire.send_wait_us(), 17u);
  EXPECT_EQ(wire.send_us(), 18u);  // whole microseconds
}

TEST(AnswerSendStatsTest, SumsFromManyThreads) {
  AnswerSendStats stats;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats] {
      for (int i = 0; i < 1000; ++i) stats.Add(absl::Microseconds(1), absl::Microseconds(3));
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AnswerSendTotals totals = stats.totals();
  EXPECT_EQ(totals.answers, 4000);
  EXPECT_EQ(totals.wait, absl::Milliseconds(4));
  EXPECT_EQ(totals.send, absl::Milliseconds(12));
}

}  // namespace
}  // namespace gmmscore
