#include "client/load/load_stats.h"

#include "client/load/load_runner.h"
#include "client/load/server_breakdown.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore::load {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(PercentileTest, NearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  EXPECT_EQ(Percentile(v, 50), 50);
  EXPECT_EQ(Percentile(v, 90), 90);
  EXPECT_EQ(Percentile(v, 99), 99);
  EXPECT_EQ(Percentile(v, 100), 100);
  EXPECT_EQ(Percentile(v, 0), 1);
  EXPECT_EQ(Percentile({7}, 99), 7);
  EXPECT_EQ(Percentile({}, 50), 0);
  // 10 values: p90 is the 9th, p99 the 10th (ceil(9.9)).
  const std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(ten, 90), 9);
  EXPECT_EQ(Percentile(ten, 95), 10);
  EXPECT_EQ(Percentile(ten, 99), 10);
}

TEST(PercentileTest, Summary) {
  const LatencySummary s = Summarize({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_EQ(s.p50, 2);
  EXPECT_EQ(s.p99, 4);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(Summarize({}).count, 0);
}

// Two streams, 100 ms chunks of 10 frames, over a 1 s window: latencies,
// lateness, unanswered chunks, throughput and the real-time factor.
TEST(ComputeMetricsTest, HandMadeRecords) {
  std::vector<ChunkRecord> records;
  const int64_t start = 1000 * kMs;
  for (int k = 0; k < 10; ++k) {
    const int64_t due = start + k * 100 * kMs;
    // Stream A: 5 ms latency, sent 1 ms late.
    records.push_back({.due_ns = due, .sent_ns = due + kMs, .answered_ns = due + 5 * kMs,
                       .frames = 10});
    // Stream B: 20 ms latency, except chunk 7 (150 ms: late) and chunk 9
    // (never answered).
    const int64_t latency = k == 7 ? 150 * kMs : 20 * kMs;
    records.push_back({.due_ns = due, .sent_ns = due, .answered_ns = k == 9 ? 0 : due + latency,
                       .frames = 10});
  }
  // Outside the window: ignored for latency.
  records.push_back({.due_ns = start - 100 * kMs, .sent_ns = 1, .answered_ns = start - kMs,
                     .frames = 10});
  const PointMetrics m = ComputeMetrics(records, {.start_ns = start, .end_ns = start + 1000 * kMs},
                                        {.late_ns = 100 * kMs, .window_ns = 500 * kMs,
                                         .streams = 2});
  EXPECT_DOUBLE_EQ(m.seconds, 1.0);
  EXPECT_EQ(m.chunks_due, 20);
  EXPECT_EQ(m.chunks_answered, 19);
  EXPECT_EQ(m.chunks_unanswered, 1);
  EXPECT_EQ(m.late_chunks, 2);  // the 150 ms one and the unanswered one
  EXPECT_EQ(m.latency_ms.count, 19);
  EXPECT_NEAR(m.latency_ms.p50, 5, 1e-9);   // 10 of 19 are 5 ms
  EXPECT_NEAR(m.latency_ms.p90, 20, 1e-9);
  EXPECT_NEAR(m.latency_ms.max, 150, 1e-9);
  EXPECT_NEAR(m.send_lag_ms.max, 1, 1e-9);
  // Chunk 7 of B answers at 850 ms, inside; 19 answers of 10 frames.
  EXPECT_EQ(m.frames_answered, 190);
  EXPECT_DOUBLE_EQ(m.frames_per_s, 190);
  EXPECT_DOUBLE_EQ(m.chunks_per_s, 19);
  EXPECT_DOUBLE_EQ(m.stream_equivalents, 1.9);
  // 2 streams x 1 s = 200 frames of speech due; 190 answered.
  EXPECT_NEAR(m.real_time_factor, 200.0 / 190.0, 1e-12);
  ASSERT_EQ(m.windows.size(), 2u);
  EXPECT_EQ(m.windows[0].chunks, 10);
  EXPECT_EQ(m.windows[1].chunks, 9);
  EXPECT_NEAR(m.windows[0].p99_ms, 20, 1e-9);
  EXPECT_NEAR(m.windows[1].p99_ms, 150, 1e-9);
  EXPECT_DOUBLE_EQ(m.windows[0].frames_per_s, 200);  // 100 frames in 0.5 s
}

// Answers with the server's times split their latency after the send; the
// others, and chunks due outside the window, are left out of the split.
TEST(ComputeMetricsTest, TheServersTimesSplitTheLatencyAfterTheSend) {
  std::vector<ChunkRecord> records;
  const int64_t start = 1000 * kMs;
  for (int k = 0; k < 4; ++k) {
    const int64_t due = start + k * 100 * kMs;
    // Sent 1 ms late; k ms to the server, 2 ms in it, 3k ms back.
    const int64_t sent = due + kMs, read = sent + k * kMs, encoded = read + 2 * kMs;
    records.push_back({.due_ns = due, .sent_ns = sent, .answered_ns = encoded + 3 * k * kMs,
                       .frames = 10, .server_read_ns = read, .server_encoded_ns = encoded});
    // Untimed answers, an unanswered timed chunk, and a timed one due
    // before the window: none of them in the split.
    records.push_back({.due_ns = due, .sent_ns = due, .answered_ns = due + 50 * kMs, .frames = 10});
  }
  records.push_back({.due_ns = start, .sent_ns = start, .answered_ns = 0, .frames = 10,
                     .server_read_ns = start + kMs, .server_encoded_ns = start + 2 * kMs});
  records.push_back({.due_ns = start - 100 * kMs, .sent_ns = start - 100 * kMs,
                     .answered_ns = start + 500 * kMs, .frames = 10,
                     .server_read_ns = start, .server_encoded_ns = start + 400 * kMs});
  const PointMetrics m = ComputeMetrics(records, {.start_ns = start, .end_ns = start + 1000 * kMs},
                                        {.streams = 3});
  ASSERT_EQ(m.to_server_ms.count, 4);
  ASSERT_EQ(m.in_server_ms.count, 4);
  ASSERT_EQ(m.from_server_ms.count, 4);
  EXPECT_NEAR(m.to_server_ms.mean, 1.5, 1e-9);  // 0, 1, 2, 3
  EXPECT_NEAR(m.to_server_ms.max, 3, 1e-9);
  EXPECT_NEAR(m.in_server_ms.mean, 2, 1e-9);
  EXPECT_NEAR(m.in_server_ms.p99, 2, 1e-9);
  EXPECT_NEAR(m.from_server_ms.mean, 4.5, 1e-9);  // 0, 3, 6, 9
  EXPECT_NEAR(m.from_server_ms.max, 9, 1e-9);
  // Untimed, the split is empty.
  const PointMetrics untimed = ComputeMetrics({records[1], records[3]},
                                              {.start_ns = start, .end_ns = start + 1000 * kMs}, {});
  EXPECT_EQ(untimed.to_server_ms.count, 0);
  EXPECT_EQ(untimed.from_server_ms.count, 0);
}

TEST(ComputeMetricsTest, AsFastAsPossibleRealTimeFactor) {
  // One stream answered 1000 frames in 1 s: 10 s of speech per second.
  std::vector<ChunkRecord> records;
  for (int k = 0; k < 100; ++k) {
    records.push_back({.due_ns = k * 10 * kMs, .sent_ns = k * 10 * kMs,
                       .answered_ns = k * 10 * kMs + 9 * kMs, .frames = 10});
  }
  const PointMetrics m = ComputeMetrics(records, {.start_ns = 0, .end_ns = 1000 * kMs},
                                        {.streams = 1});
  EXPECT_DOUBLE_EQ(m.frames_per_s, 1000);
  EXPECT_DOUBLE_EQ(m.real_time_factor, 0.1);
  EXPECT_EQ(m.late_chunks, 0);
  ASSERT_EQ(m.windows.size(), 1u);  // 1 s is shorter than the 2 s default window
}

TEST(StabilityTest, Rule) {
  // Windows whose mean latency is a third of their p99.
  auto w = [](double tput, double p99) {
    return WindowMetrics{.frames_per_s = tput, .mean_ms = p99 / 3, .p99_ms = p99};
  };
  const StabilityRule rule{
      .windows = 3, .tolerance = 0.10, .latency_floor_ms = 1.0, .use_p99 = true};
  EXPECT_FALSE(CheckStability({w(100, 5), w(100, 5)}, rule).stable);
  EXPECT_EQ(CheckStability({w(100, 5), w(100, 5)}, rule).reason, "2 windows, 3 needed");
  // The first window (warm-up effects) does not count: only the last 3.
  EXPECT_TRUE(CheckStability({w(10, 90), w(100, 20), w(105, 21), w(96, 19)}, rule).stable);
  // Throughput 130 vs mean 110: 18% off.
  const StabilityVerdict tput = CheckStability({w(100, 20), w(100, 20), w(130, 20)}, rule);
  EXPECT_FALSE(tput.stable);
  EXPECT_NE(tput.reason.find("throughput"), std::string::npos);
  // p99 30 vs mean 23.3.
  const StabilityVerdict p99 = CheckStability({w(100, 20), w(100, 20), w(100, 30)}, rule);
  EXPECT_FALSE(p99.stable);
  EXPECT_NE(p99.reason.find("p99"), std::string::npos);
  // Sub-millisecond latencies that differ by 100% but < 1 ms are stable.
  EXPECT_TRUE(CheckStability({w(100, 0.4), w(100, 0.8), w(100, 0.6)}, rule).stable);
  // perf_analyzer's default compares mean latency: means 10, 10, 13.3 ms
  // (13.3 is 20% above their average) are unstable; 20, 20, 21 are stable.
  StabilityRule by_mean = rule;
  by_mean.use_p99 = false;
  const StabilityVerdict mean = CheckStability({w(100, 30), w(100, 30), w(100, 40)}, by_mean);
  EXPECT_FALSE(mean.stable);
  EXPECT_NE(mean.reason.find("mean latency"), std::string::npos) << mean.reason;
  EXPECT_TRUE(CheckStability({w(100, 60), w(100, 60), w(100, 63)}, by_mean).stable);
  // A p99 spike with a steady mean: unstable by p99, stable by mean.
  std::vector<WindowMetrics> spike = {w(100, 60), w(100, 60), w(100, 60)};
  spike[2].p99_ms = 120;
  EXPECT_TRUE(CheckStability(spike, by_mean).stable);
  EXPECT_FALSE(CheckStability(spike, rule).stable);
}

TEST(ServerBreakdownTest, Differences) {
  v1::GetServerStatsResponse a, b;
  a.set_uptime_us(1'000'000);
  b.set_uptime_us(3'000'000);
  a.set_process_cpu_us(500'000);
  b.set_process_cpu_us(2'500'000);
  a.set_jobs(100);
  b.set_jobs(300);
  a.set_batches(10);
  b.set_batches(50);
  b.set_frames(2000);
  b.set_queue_wait_us(400'000);  // 2 ms per job
  b.set_score_us(200'000);       // 5 ms per batch, 10% busy
  b.set_answer_us(20'000);       // 0.1 ms per job
  a.set_answers_sent(1000);
  b.set_answers_sent(1100);
  a.set_send_wait_us(5'000);
  b.set_send_wait_us(15'000);  // 0.1 ms per answer
  b.set_send_us(250'000);      // 2.5 ms per answer
  const ServerBreakdown d = DiffServerStats(a, b);
  EXPECT_DOUBLE_EQ(d.seconds, 2.0);
  EXPECT_DOUBLE_EQ(d.cpu_cores, 1.0);
  EXPECT_EQ(d.jobs, 200);
  EXPECT_EQ(d.batches, 40);
  EXPECT_DOUBLE_EQ(d.frames_per_batch, 50);
  EXPECT_DOUBLE_EQ(d.jobs_per_batch, 5);
  EXPECT_DOUBLE_EQ(d.queue_wait_ms, 2);
  EXPECT_DOUBLE_EQ(d.score_ms, 5);
  EXPECT_DOUBLE_EQ(d.answer_ms, 0.1);
  EXPECT_DOUBLE_EQ(d.backend_busy, 0.1);
  EXPECT_DOUBLE_EQ(d.in_scheduler_ms, 7.1);
  EXPECT_EQ(d.answers, 100);
  EXPECT_DOUBLE_EQ(d.send_wait_ms, 0.1);
  EXPECT_DOUBLE_EQ(d.send_ms, 2.5);
  EXPECT_THAT(FormatBreakdown(d), testing::HasSubstr("per answer send wait 0.10 + send 2.50 ms"));
  // No batches: ratios are 0, not NaN; no answers: no send part.
  EXPECT_EQ(DiffServerStats(a, a).score_ms, 0);
  EXPECT_EQ(DiffServerStats(a, a).send_ms, 0);
  EXPECT_THAT(FormatBreakdown(DiffServerStats(a, a)), testing::Not(testing::HasSubstr("send")));
}

TEST(ParseStreamCountsTest, Forms) {
  EXPECT_EQ(*ParseStreamCounts("8"), std::vector<int>({8}));
  EXPECT_EQ(*ParseStreamCounts("1,4,16"), std::vector<int>({1, 4, 16}));
  EXPECT_EQ(*ParseStreamCounts("8:32:8"), std::vector<int>({8, 16, 24, 32}));
  EXPECT_EQ(*ParseStreamCounts("8:30:8"), std::vector<int>({8, 16, 24}));
  for (const char* bad : {"", "0", "a", "8:4:1", "1:8", "1:8:0", "4,-1"}) {
    EXPECT_FALSE(ParseStreamCounts(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gmmscore::load
