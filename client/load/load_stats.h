// The arithmetic of a load test, free of gRPC: per-chunk records in, latency
// percentiles, throughput, real-time factor, lateness and the stability rule
// out. Everything here is a pure function, so load_stats_test.cc checks it
// on hand-made records.
//
//   std::vector<ChunkRecord> records = ...;   // from every stream of a run
//   MeasureWindow window{.start_ns = m0, .end_ns = m1};
//   PointMetrics metrics = ComputeMetrics(records, window, {.late_ns = 100'000'000});
//   StabilityVerdict verdict = CheckStability(metrics.windows, {});
//
// Times are int64 nanoseconds on one monotonic clock (the run's steady clock).
//
// Thread safety: pure functions; no shared state.
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_STATS_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gmmscore::load {

// 100 frames per second: the usual 10 ms frame shift.
inline constexpr double kFramesPerSecond = 100.0;

// One chunk of one stream, as the load generator saw it.
struct ChunkRecord {
  // When the chunk was due: in real-time mode its slot in the schedule
  // (stream start + k chunk durations, when a live source would have its
  // frames); as fast as possible, the moment the generator decided to send
  // it. Latency is measured from here, so a client that cannot send on
  // time (flow control, a slow generator) shows up as latency instead of
  // hiding it ("coordinated omission").
  int64_t due_ns = 0;
  // When the chunk was handed to gRPC (StartWrite); >= due_ns. 0 = never.
  int64_t sent_ns = 0;
  // When its answer arrived; 0 = never (the stream failed or was cut off).
  int64_t answered_ns = 0;
  int32_t frames = 0;
  // The server's times for it (OutputOptions.server_timing), on this
  // clock: when the server's read of it completed, and when its answer was
  // encoded for sending. 0 = the answer carried none.
  int64_t server_read_ns = 0;
  int64_t server_encoded_ns = 0;
};

// Nearest-rank percentile: the smallest value v such that at least p% of
// `values` are <= v (p in [0, 100]; p = 0 gives the minimum). 0 for an empty
// input. Takes a copy, which it sorts.
double Percentile(std::vector<double> values, double p);

struct LatencySummary {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

// Summary of `values` (any unit; the caller's); all zero when empty.
LatencySummary Summarize(const std::vector<double>& values);

// [start_ns, end_ns): the measured part of a run.
struct MeasureWindow {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  double seconds() const { return (end_ns - start_ns) * 1e-9; }
};

// One stability window: throughput and tail latency of a slice of the
// measurement.
struct WindowMetrics {
  double start_s = 0;         // from the measurement's start
  double frames_per_s = 0;    // frames of answers that arrived in the window
  double mean_ms = 0;         // latency of the chunks due in the window
  double p99_ms = 0;
  int64_t chunks = 0;         // chunks due in the window and answered
};

struct MetricsOptions {
  // A chunk is late when its latency exceeds this (typically one chunk's
  // duration: the next chunk is already due and this one is unanswered).
  int64_t late_ns = 100'000'000;
  // Length of the stability windows; the last partial window is dropped
  // unless it is the only one.
  int64_t window_ns = 2'000'000'000;
  // Streams that were live during the window (for the real-time factor).
  int streams = 1;
};

struct PointMetrics {
  double seconds = 0;            // length of the measurement
  int64_t chunks_due = 0;        // chunks due in the window
  int64_t chunks_answered = 0;   // of those, answered (at any time)
  int64_t chunks_unanswered = 0; // of those, never answered
  int64_t frames_answered = 0;   // frames of answers that arrived in the window
  double frames_per_s = 0;       // frames_answered / seconds
  double chunks_per_s = 0;       // answers that arrived in the window / seconds
  // Wall time per second of speech for one stream: streams * seconds * 100
  // / frames_answered. 1.0 = exactly real time; < 1 faster (as fast as
  // possible), > 1 the server falls behind. 0 when nothing was answered.
  double real_time_factor = 0;
  // frames_per_s / 100: how many real-time streams this throughput carries.
  double stream_equivalents = 0;
  LatencySummary latency_ms;     // due -> answer, chunks due in the window
  LatencySummary send_lag_ms;    // due -> sent: how late the generator sent
  // The answered chunks whose answers carried the server's times, their
  // latency after the send split three ways (count: how many):
  LatencySummary to_server_ms;    // sent -> the server's read of it completed
  LatencySummary in_server_ms;    // that read -> its answer encoded
  LatencySummary from_server_ms;  // encoded -> its answer read here
  int64_t late_chunks = 0;       // latency > late_ns (unanswered ones too)
  std::vector<WindowMetrics> windows;
};

// Metrics of the chunks in `window`. Latencies (and lateness) belong to the
// window a chunk was due in, throughput to the window its answer arrived in.
PointMetrics ComputeMetrics(const std::vector<ChunkRecord>& records, const MeasureWindow& window,
                            const MetricsOptions& options);

// perf_analyzer's rule: a measurement is stable when the last `windows`
// windows agree: each one's throughput within `tolerance` (a fraction) of
// their mean, and each one's latency (mean, as perf_analyzer's default, or
// p99) within max(tolerance * mean, latency_floor_ms) of their mean (the
// floor keeps millisecond jitter on millisecond latencies from counting as
// instability).
struct StabilityRule {
  int windows = 3;
  double tolerance = 0.10;
  double latency_floor_ms = 1.0;
  bool use_p99 = false;  // compare the windows' p99 instead of their mean
};

struct StabilityVerdict {
  bool stable = false;
  // Why not (or "" when stable): "2 windows, 3 needed", "throughput ...".
  std::string reason;
};

StabilityVerdict CheckStability(const std::vector<WindowMetrics>& windows,
                                const StabilityRule& rule);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_STATS_H_
