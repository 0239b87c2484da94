// LoadReport: a load test's points written for people (one block of text
// per point), for scripts (JSON, CSV) and as a picture (svg_plot.h).
//
//   LoadReport report{.run = description};
//   report.points.push_back(point);
//   std::printf("%s", FormatPoint(point, slo_ms).c_str());
//   WriteFile("out.json", ReportJson(report));
//
// JSON layout: {"run": {...flags...}, "points": [{"streams": N,
// "throughput": {...}, "latency_ms": {"p50": ...}, "send_lag_ms": {...},
// with --server_timing (when some answers carried times) "to_server_ms",
// "in_server_ms", "from_server_ms" (each {"count": ..., "p50": ...}),
// "late_chunks": ..., "stream_status": {"OK": N, ...}, "stability": {...},
// "windows": [...], "verify": {...}, "server": {...}}, ...], "search": {...}}.
// CSV: one row per point, the header names every column.
//
// Thread safety: pure functions.
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_REPORT_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/load/load_runner.h"

namespace gmmscore::load {

// What was run, for the report's header.
struct RunDescription {
  std::string server;
  std::string models;    // comma-separated, as streamed
  std::string device;    // the server's backend, from GetServerStats ("" if unknown)
  std::string features;  // FeatureSource::description()
  bool realtime = true;
  int chunk_frames = 10;
  double duration_s = 0;
  int64_t chunks = 0;
  double slo_ms = 0;
  double verify_fraction = 0;
  std::string date;          // UTC, ISO 8601
  std::string command_line;  // as typed
};

struct LoadReport {
  RunDescription run;
  std::vector<PointResult> points;  // in the order run
  std::optional<CapacitySearch> search;
};

// Several lines ending in '\n'; `slo_ms` > 0 adds the pass/fail line.
std::string FormatPoint(const PointResult& point, double slo_ms);

std::string ReportJson(const LoadReport& report);
std::string ReportCsv(const LoadReport& report);

// The points of a ReportCsv text again, with the fields a plot and the
// capacity need (streams, mode, throughput, latency percentiles, lateness,
// failures, within_slo); the rest stay zero. INVALID_ARGUMENT naming the
// line when a row does not match the header.
absl::StatusOr<std::vector<PointResult>> ReadPointsCsv(const std::string& text);

// The largest stream count that passed its SLO below every count that
// failed (0: none passed), and the smallest that failed (0: none).
CapacitySearch CapacityOf(const std::vector<PointResult>& points);

// Writes `contents` to `path`; errno-derived status on failure.
absl::Status WriteFile(const std::string& path, const std::string& contents);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_REPORT_H_
