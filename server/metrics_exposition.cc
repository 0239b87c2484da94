#include "server/metrics_exposition.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

std::string FormatLabels(const MetricLabels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? "," : "", labels[i].first, "=\"",
                    EscapeLabelValue(labels[i].second), "\"");
  }
  return out + "}";
}

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::abs(value) < 9e15) {
    return absl::StrFormat("%d", static_cast<int64_t>(value));
  }
  return absl::StrFormat("%.15g", value);
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void MetricsWriter::Family(const std::string& name, const std::string& help,
                           const std::string& type) {
  absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void MetricsWriter::Sample(const std::string& name, const MetricLabels& labels, double value) {
  absl::StrAppend(&text_, name, FormatLabels(labels), " ", FormatMetricValue(value), "\n");
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<int64_t>[bounds_.size() + 1]()) {}

std::vector<double> Histogram::ExponentialBounds(double start, double factor, int count) {
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

void Histogram::Observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

int64_t Histogram::count() const {
  int64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) total += counts_[i].load(std::memory_order_relaxed);
  return total;
}

double Histogram::sum() const { return sum_.load(std::memory_order_relaxed); }

void Histogram::WriteTo(MetricsWriter* out, const std::string& name,
                        const MetricLabels& labels) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    MetricLabels with_le = labels;
    with_le.emplace_back("le", i < bounds_.size() ? FormatMetricValue(bounds_[i]) : "+Inf");
    out->Sample(name + "_bucket", with_le, static_cast<double>(cumulative));
  }
  out->Sample(name + "_sum", labels, sum());
  out->Sample(name + "_count", labels, static_cast<double>(cumulative));
}

std::atomic<int64_t>* LabeledCounter::Cell(const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  return &values_.try_emplace(labels, 0).first->second;
}

int64_t LabeledCounter::Get(const MetricLabels& labels) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0 : it->second.load(std::memory_order_relaxed);
}

void LabeledCounter::WriteTo(MetricsWriter* out, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [labels, value] : values_) {
    out->Sample(name, labels, static_cast<double>(value.load(std::memory_order_relaxed)));
  }
}

}  // namespace gmmscore
