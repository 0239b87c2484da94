// Histogram and LabeledCounter counted from many threads at once (they take
// no lock to count), and a counter's series kept where it was made.
#include "server/metrics_exposition.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

constexpr int kThreads = 8;

TEST(MetricsExpositionTest, CountersAddedFromManyThreadsLoseNothing) {
  LabeledCounter family;
  const MetricLabels a = {{"grpc_method", "StreamScore"}};
  const MetricLabels b = {{"grpc_method", "Score"}};
  std::atomic<int64_t>* kept = family.Cell(a);
  constexpr int kAdds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) {
        if (t % 2 == 0) {
          kept->fetch_add(1, std::memory_order_relaxed);  // as the interceptor does
        } else {
          family.Add(a);
        }
        family.Add(b, 2);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(family.Get(a), int64_t{kThreads} * kAdds);
  EXPECT_EQ(family.Get(b), int64_t{2} * kThreads * kAdds);
  EXPECT_EQ(family.Cell(a), kept);  // series made later did not move it
  EXPECT_EQ(family.Get({{"grpc_method", "Align"}}), 0);
  MetricsWriter out;
  family.WriteTo(&out, "c");
  EXPECT_EQ(out.Take(), "c{grpc_method=\"Score\"} 320000\nc{grpc_method=\"StreamScore\"} 160000\n");
}

TEST(MetricsExpositionTest, GetMakesNoSeriesAndCellMakesOneAtZero) {
  LabeledCounter family;
  EXPECT_EQ(family.Get({{"k", "v"}}), 0);
  MetricsWriter none;
  family.WriteTo(&none, "c");
  EXPECT_EQ(none.Take(), "");
  family.Cell({{"k", "v"}});
  MetricsWriter zero;
  family.WriteTo(&zero, "c");
  EXPECT_EQ(zero.Take(), "c{k=\"v\"} 0\n");
}

TEST(MetricsExpositionTest, HistogramObservedFromManyThreadsMatchesItsReference) {
  const std::vector<double> bounds = {0.001, 0.01, 0.1, 1};
  Histogram histogram(bounds);
  constexpr int kObservations = 20000;
  std::vector<std::vector<double>> drawn(kThreads);
  std::random_device seed;
  for (int t = 0; t < kThreads; ++t) {
    std::mt19937 rng(seed());
    std::uniform_real_distribution<double> exponent(-4, 1);
    // Whole multiples of 1/1024 around the bounds: their sum is exact in any
    // order, so the threads' sum can be compared exactly.
    for (int i = 0; i < kObservations; ++i) {
      drawn[t].push_back(std::round(std::pow(10.0, exponent(rng)) * 1024) / 1024);
    }
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (double value : drawn[t]) histogram.Observe(value);
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::vector<int64_t> expected(bounds.size() + 1, 0);
  double expected_sum = 0;
  for (const std::vector<double>& values : drawn) {
    for (double value : values) {
      size_t bucket = 0;
      while (bucket < bounds.size() && value > bounds[bucket]) ++bucket;
      ++expected[bucket];
      expected_sum += value;
    }
  }
  EXPECT_EQ(histogram.count(), int64_t{kThreads} * kObservations);
  EXPECT_EQ(histogram.sum(), expected_sum);
  MetricsWriter out;
  histogram.WriteTo(&out, "h", {});
  std::string want;
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += expected[i];
    want += "h_bucket{le=\"" + (i < bounds.size() ? FormatMetricValue(bounds[i]) : "+Inf") +
            "\"} " + std::to_string(cumulative) + "\n";
  }
  want += "h_sum " + FormatMetricValue(expected_sum) + "\nh_count " + std::to_string(cumulative) + "\n";
  EXPECT_EQ(out.Take(), want);
}

}  // namespace
}  // namespace gmmscore
