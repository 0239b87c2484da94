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
// Thread safety: Histogram and LabeledCounter are thread-safe and take no
// lock to count (they are counted per message of every stream: a lock there
// was shared by every gRPC thread); a MetricsWriter belongs to one thread.
#ifndef GMMSCORE_SERVER_METRICS_EXPOSITION_H_
#define GMMSCORE_SERVER_METRICS_EXPOSITION_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
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
  // lines are the caller's. The buckets and the sum are read one after
  // another, not as one snapshot: _count always equals the +Inf bucket, but
  // _sum may hold an observation the buckets do not yet (or the reverse).
  void WriteTo(MetricsWriter* out, const std::string& name, const MetricLabels& labels) const;
  int64_t count() const;
  double sum() const;

 private:
  const std::vector<double> bounds_;
  // Per bucket, not cumulative; +Inf last (bounds_.size() + 1 of them).
  const std::unique_ptr<std::atomic<int64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// A counter family keyed by its label values. A series is made (at zero) on
// its first Add or Cell and kept for the family's life.
class LabeledCounter {
 public:
  void Add(const MetricLabels& labels, int64_t delta = 1) {
    Cell(labels)->fetch_add(delta, std::memory_order_relaxed);
  }
  // The series' counter, to keep and add to without a lookup (an
  // interceptor resolves its method's once per RPC, not once per message).
  // Valid as long as the family.
  std::atomic<int64_t>* Cell(const MetricLabels& labels);
  int64_t Get(const MetricLabels& labels) const;
  void WriteTo(MetricsWriter* out, const std::string& name) const;

 private:
  mutable absl::Mutex mu_;
  // std::map never moves its nodes, so a Cell stays where it was made.
  std::map<MetricLabels, std::atomic<int64_t>> values_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_METRICS_EXPOSITION_H_
