// Prometheus text exposition (format 0.0.4) without a client library
// (Debian 12 has none): counters, gauges and histograms written by hand, with
// label values escaped and floats in Prometheus' spelling (+Inf, NaN).
//
//   MetricsWriter out;
//   out.Family("gmmscore_frames_scored_total", "Frames scored.", "counter");
//   out.Sample("gmmscore_frames_scored_total", {}, 1234);
//   Histogram latency(Histogram::ExponentialBounds(0.0005, 2, 14));
//   latency.Observe(0.003);
//   latency.WriteTo(&out, "gmmscore_chunk_latency_seconds", {{"rpc", "StreamScore"}});
//   std::string body = out.Take();
//
// Thread safety: Histogram and LabeledCounter are thread-safe; a
// MetricsWriter belongs to one thread.
#ifndef GMMSCORE_SERVER_METRICS_EXPOSITION_H_
#define GMMSCORE_SERVER_METRICS_EXPOSITION_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gmmscore {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsWriter {
 public:
  // "# HELP" and "# TYPE" lines; `type` is counter, gauge or histogram.
  void Family(const std::string& name, const std::string& help, const std::string& type);
  // One sample line: name{labels} value.
  void Sample(const std::string& name, const MetricLabels& labels, double value);
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

// Prometheus' spelling of a sample value: integers without a fraction,
// +Inf, -Inf, NaN.
std::string FormatMetricValue(double value);
// `value` with \, " and newline escaped, for a label value.
std::string EscapeLabelValue(const std::string& value);

class Histogram {
 public:
  // `upper_bounds` ascending; +Inf is implied.
  explicit Histogram(std::vector<double> upper_bounds);
  // start, start*factor, ... (count bounds).
  static std::vector<double> ExponentialBounds(double start, double factor, int count);

  void Observe(double value);
  // _bucket{le=...} (cumulative), _sum, _count lines; the family's HELP/TYPE
  // lines are the caller's.
  void WriteTo(MetricsWriter* out, const std::string& name, const MetricLabels& labels) const;
  int64_t count() const;
  double sum() const;

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<int64_t> counts_ ABSL_GUARDED_BY(mu_);  // per bucket, not cumulative; +Inf last
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// A counter family keyed by its label values.
class LabeledCounter {
 public:
  void Add(const MetricLabels& labels, int64_t delta = 1);
  int64_t Get(const MetricLabels& labels) const;
  void WriteTo(MetricsWriter* out, const std::string& name) const;

 private:
  mutable absl::Mutex mu_;
  std::map<MetricLabels, int64_t> values_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_METRICS_EXPOSITION_H_
