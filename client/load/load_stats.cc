#include "client/load/load_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"

namespace gmmscore::load {

namespace {

// Nearest rank of `sorted` (ascending, non-empty): rank ceil(p/100 * n),
// 1-based, at least 1. The epsilon keeps p = 90 of n = 10 at rank 9 despite
// 0.9 * 10 rounding to 9.000000000000002.
double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(p / 100.0 * n - 1e-9)));
  return sorted[std::min<size_t>(sorted.size(), rank) - 1];
}

// The latency of answers that carried the server's times, split where the
// chunk was.
struct ServerSplit {
  std::vector<double> to_server, in_server, from_server;

  void Add(const ChunkRecord& r) {
    if (r.server_read_ns == 0 || r.sent_ns == 0 || r.answered_ns == 0) return;
    to_server.push_back((r.server_read_ns - r.sent_ns) * 1e-6);
    in_server.push_back((r.server_encoded_ns - r.server_read_ns) * 1e-6);
    from_server.push_back((r.answered_ns - r.server_encoded_ns) * 1e-6);
  }
};

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, p);
}

LatencySummary Summarize(const std::vector<double>& values) {
  LatencySummary summary;
  if (values.empty()) return summary;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double p) { return PercentileOfSorted(sorted, p); };
  summary.count = static_cast<int64_t>(sorted.size());
  summary.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / sorted.size();
  summary.p50 = at(50);
  summary.p90 = at(90);
  summary.p95 = at(95);
  summary.p99 = at(99);
  summary.max = sorted.back();
  return summary;
}

PointMetrics ComputeMetrics(const std::vector<ChunkRecord>& records, const MeasureWindow& window,
                            const MetricsOptions& options) {
  PointMetrics m;
  m.seconds = window.seconds();
  if (window.end_ns <= window.start_ns) return m;
  const int64_t span = window.end_ns - window.start_ns;
  const int64_t window_ns = std::max<int64_t>(1, std::min(options.window_ns, span));
  // Whole windows only; a run shorter than one window is one window.
  const int num_windows = std::max<int>(1, static_cast<int>(span / window_ns));
  std::vector<std::vector<double>> window_latency(num_windows);
  std::vector<int64_t> window_frames(num_windows, 0);
  auto window_of = [&](int64_t t) { return static_cast<int>((t - window.start_ns) / window_ns); };

  std::vector<double> latency, send_lag;
  ServerSplit split;
  int64_t answers_in_window = 0;
  for (const ChunkRecord& r : records) {
    if (r.answered_ns != 0 && r.answered_ns >= window.start_ns && r.answered_ns < window.end_ns) {
      m.frames_answered += r.frames;
      ++answers_in_window;
      const int w = window_of(r.answered_ns);
      if (w < num_windows) window_frames[w] += r.frames;
    }
    if (r.due_ns < window.start_ns || r.due_ns >= window.end_ns) continue;
    ++m.chunks_due;
    if (r.sent_ns != 0) send_lag.push_back((r.sent_ns - r.due_ns) * 1e-6);
    if (r.answered_ns == 0) {
      ++m.chunks_unanswered;
      ++m.late_chunks;
      continue;
    }
    ++m.chunks_answered;
    const int64_t lat = r.answered_ns - r.due_ns;
    if (lat > options.late_ns) ++m.late_chunks;
    latency.push_back(lat * 1e-6);
    split.Add(r);
    const int w = window_of(r.due_ns);
    if (w < num_windows) window_latency[w].push_back(lat * 1e-6);
  }
  m.frames_per_s = m.frames_answered / m.seconds;
  m.chunks_per_s = answers_in_window / m.seconds;
  m.stream_equivalents = m.frames_per_s / kFramesPerSecond;
  if (m.frames_answered > 0) {
    m.real_time_factor = options.streams * m.seconds * kFramesPerSecond / m.frames_answered;
  }
  m.latency_ms = Summarize(latency);
  m.send_lag_ms = Summarize(send_lag);
  m.to_server_ms = Summarize(split.to_server);
  m.in_server_ms = Summarize(split.in_server);
  m.from_server_ms = Summarize(split.from_server);
  const double window_s = window_ns * 1e-9;
  for (int w = 0; w < num_windows; ++w) {
    m.windows.push_back({.start_s = w * window_s,
                         .frames_per_s = window_frames[w] / window_s,
                         .mean_ms = Summarize(window_latency[w]).mean,
                         .p99_ms = Percentile(window_latency[w], 99),
                         .chunks = static_cast<int64_t>(window_latency[w].size())});
  }
  return m;
}

StabilityVerdict CheckStability(const std::vector<WindowMetrics>& windows,
                                const StabilityRule& rule) {
  const int n = std::max(1, rule.windows);
  if (static_cast<int>(windows.size()) < n) {
    return {false, absl::StrFormat("%d windows, %d needed", windows.size(), n)};
  }
  const auto last = windows.end() - n;
  auto latency = [&rule](const WindowMetrics& w) { return rule.use_p99 ? w.p99_ms : w.mean_ms; };
  const char* latency_name = rule.use_p99 ? "p99" : "mean latency";
  double mean_tput = 0, mean_latency = 0;
  for (auto it = last; it != windows.end(); ++it) {
    mean_tput += it->frames_per_s / n;
    mean_latency += latency(*it) / n;
  }
  const double tput_band = rule.tolerance * mean_tput;
  const double latency_band = std::max(rule.tolerance * mean_latency, rule.latency_floor_ms);
  for (auto it = last; it != windows.end(); ++it) {
    if (std::abs(it->frames_per_s - mean_tput) > tput_band) {
      return {false, absl::StrFormat("throughput %.0f frames/s vs mean %.0f (> %.0f%%)",
                                     it->frames_per_s, mean_tput, rule.tolerance * 100)};
    }
    if (std::abs(latency(*it) - mean_latency) > latency_band) {
      return {false, absl::StrFormat("%s %.2f ms vs %.2f ms over the windows (> %.2f ms)",
                                     latency_name, latency(*it), mean_latency, latency_band)};
    }
  }
  return {true, ""};
}

}  // namespace gmmscore::load
