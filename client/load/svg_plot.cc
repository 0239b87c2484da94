#include "client/load/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gmmscore::load {
namespace {

constexpr double kWidth = 760;
constexpr double kPanelHeight = 300;
constexpr double kTitleHeight = 36;
constexpr double kLeft = 78, kRight = 24, kTop = 34, kBottom = 46;

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Tick label: no trailing zeros, thousands as "k".
std::string TickLabel(double v) {
  if (std::abs(v) >= 10000) return absl::StrFormat("%gk", v / 1000);
  return absl::StrFormat("%g", v);
}

void Text(std::string* svg, double x, double y, const std::string& text, const char* anchor,
          int size = 12, const std::string& extra = "") {
  absl::StrAppendFormat(svg,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\"%s>%s"
                        "</text>\n",
                        x, y, size, anchor, extra, Escape(text));
}

void RenderPanel(std::string* svg, const Panel& panel, double top) {
  const bool log_y = panel.log_y;
  auto drawable = [log_y](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && (!log_y || y > 0);
  };
  // Data range, from 0 unless the data go below (log: the smallest value).
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = log_y ? std::numeric_limits<double>::infinity() : 0, y_hi = log_y ? 0 : 0;
  for (const Series& s : panel.series) {
    for (const auto& [x, y] : s.points) {
      if (!drawable(x, y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  for (const Rule& r : panel.horizontal) {
    if (log_y && r.value <= 0) continue;
    y_lo = std::min(y_lo, r.value);
    y_hi = std::max(y_hi, r.value);
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1;
  x_lo = std::min(x_lo, 0.0);
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  if (log_y && !(y_lo > 0 && std::isfinite(y_lo))) y_lo = 1, y_hi = std::max(y_hi, 10.0);
  if (y_hi <= y_lo) y_hi = log_y ? y_lo * 10 : y_lo + 1;
  const std::vector<double> x_ticks = NiceTicks(x_lo, x_hi, 8);
  const std::vector<double> y_ticks = log_y ? LogTicks(y_lo, y_hi) : NiceTicks(y_lo, y_hi, 6);
  x_lo = x_ticks.front(), x_hi = x_ticks.back();
  y_lo = y_ticks.front(), y_hi = y_ticks.back();
  // Position along the y axis: linear, or linear in log10.
  auto ty = [log_y](double y) { return log_y ? std::log10(y) : y; };

  const double left = kLeft, right = kWidth - kRight;
  const double plot_top = top + kTop, bottom = top + kPanelHeight - kBottom;
  auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); };
  auto py = [&](double y) {
    return bottom - (ty(y) - ty(y_lo)) / (ty(y_hi) - ty(y_lo)) * (bottom - plot_top);
  };

  Text(svg, (left + right) / 2, top + 20, panel.title, "middle", 14, " font-weight=\"bold\"");
  for (double t : y_ticks) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                          left, py(t), right, py(t));
    Text(svg, left - 6, py(t) + 4, TickLabel(t), "end", 11);
  }
  for (double t : x_ticks) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>\n",
                          px(t), plot_top, px(t), bottom);
    Text(svg, px(t), bottom + 16, TickLabel(t), "middle", 11);
  }
  absl::StrAppendFormat(svg,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                        "stroke=\"#444\"/>\n",
                        left, plot_top, right - left, bottom - plot_top);
  Text(svg, (left + right) / 2, bottom + 36, panel.x_label, "middle", 12);
  Text(svg, 16, (plot_top + bottom) / 2, log_y ? panel.y_label + " (log scale)" : panel.y_label,
       "middle", 12,
       absl::StrFormat(" transform=\"rotate(-90 16 %.1f)\"", (plot_top + bottom) / 2));

  for (const Rule& r : panel.horizontal) {
    if (r.value < y_lo || r.value > y_hi) continue;
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-dasharray=\"6 4\"/>\n",
                          left, py(r.value), right, py(r.value), r.color);
    Text(svg, right - 4, py(r.value) - 4, r.label, "end", 11,
         absl::StrFormat(" fill=\"%s\"", r.color));
  }
  for (const Rule& r : panel.vertical) {
    if (r.value < x_lo || r.value > x_hi) continue;
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-dasharray=\"6 4\"/>\n",
                          px(r.value), plot_top, px(r.value), bottom, r.color);
    Text(svg, px(r.value) + 4, plot_top + 14, r.label, "start", 11,
         absl::StrFormat(" fill=\"%s\"", r.color));
  }

  double legend_y = plot_top + 16;
  for (const Series& s : panel.series) {
    std::vector<std::pair<double, double>> points;
    for (const auto& p : s.points) {
      if (drawable(p.first, p.second)) points.push_back(p);
    }
    std::sort(points.begin(), points.end());
    std::vector<std::string> coords;
    for (const auto& [x, y] : points) coords.push_back(absl::StrFormat("%.1f,%.1f", px(x), py(y)));
    absl::StrAppendFormat(svg,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                          "points=\"%s\"/>\n",
                          s.color, s.dashed ? " stroke-dasharray=\"5 4\"" : "",
                          absl::StrJoin(coords, " "));
    if (s.markers) {
      for (const auto& [x, y] : points) {
        absl::StrAppendFormat(svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                              px(x), py(y), s.color);
      }
    }
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"2\"%s/>\n",
                          left + 10, legend_y - 4, left + 34, legend_y - 4, s.color,
                          s.dashed ? " stroke-dasharray=\"5 4\"" : "");
    Text(svg, left + 40, legend_y, s.name, "start", 11);
    legend_y += 16;
  }
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, count);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  for (int i = 0; first + i * step < hi + step * 0.999; ++i) {
    const double t = first + i * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  if (ticks.size() < 2) ticks.push_back(first + step);
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = std::max(first + 1, static_cast<int>(std::ceil(std::log10(hi) - 1e-9)));
  const bool fine = last - first <= 3;
  std::vector<double> ticks;
  for (int e = first; e <= last; ++e) {
    const double decade = std::pow(10.0, e);
    for (double m : {1.0, 2.0, 5.0}) {
      if (m > 1 && (!fine || e == last)) continue;
      ticks.push_back(m * decade);
    }
  }
  return ticks;
}

std::string RenderChart(const std::string& title, const std::vector<Panel>& panels) {
  const double height = kTitleHeight + kPanelHeight * panels.size();
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
      "%.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  Text(&svg, kWidth / 2, 24, title, "middle", 15, " font-weight=\"bold\"");
  for (size_t i = 0; i < panels.size(); ++i) {
    RenderPanel(&svg, panels[i], kTitleHeight + kPanelHeight * i);
  }
  svg += "</svg>\n";
  return svg;
}

std::string CapacityPlotSvg(const LoadReport& report) {
  const RunDescription& run = report.run;
  Panel latency{.title = "Chunk latency (due to answer)",
                .x_label = "concurrent streams",
                .y_label = "milliseconds",
                .log_y = true};
  Series p50{.name = "p50", .color = "#1f77b4"};
  Series p90{.name = "p90", .color = "#2ca02c"};
  Series p99{.name = "p99", .color = "#d62728"};
  Series max{.name = "max", .color = "#9467bd", .dashed = true};
  Panel throughput{.title = "Throughput", .x_label = "concurrent streams",
                   .y_label = "frames per second"};
  Series answered{.name = "answered frames/s", .color = "#ff7f0e"};
  Series offered{.name = "offered (100 frames/s per stream)", .color = "#7f7f7f",
                 .dashed = true, .markers = false};
  for (const PointResult& p : report.points) {
    const double x = p.streams;
    p50.points.push_back({x, p.metrics.latency_ms.p50});
    p90.points.push_back({x, p.metrics.latency_ms.p90});
    p99.points.push_back({x, p.metrics.latency_ms.p99});
    max.points.push_back({x, p.metrics.latency_ms.max});
    answered.points.push_back({x, p.metrics.frames_per_s});
    if (p.realtime) offered.points.push_back({x, p.offered_frames_per_s});
  }
  latency.series = {p50, p90, p99, max};
  // Offered first, so that answered (usually equal) is drawn over it.
  if (!offered.points.empty()) throughput.series.push_back(offered);
  throughput.series.push_back(answered);
  if (run.slo_ms > 0) {
    latency.horizontal.push_back(
        {.value = run.slo_ms, .label = absl::StrFormat("SLO %g ms", run.slo_ms),
         .color = "#d62728"});
  }
  if (report.search.has_value() && report.search->best > 0) {
    const Rule capacity{.value = static_cast<double>(report.search->best),
                        .label = absl::StrFormat("capacity %d", report.search->best),
                        .color = "#2ca02c"};
    latency.vertical.push_back(capacity);
    throughput.vertical.push_back(capacity);
  }
  const std::string where = run.device.empty() ? run.server : run.device;
  const std::string title = absl::StrFormat(
      "gmmscore-load: %s%s, %d-frame chunks, %s", run.models, where.empty() ? "" : " on " + where,
      run.chunk_frames, run.realtime ? "real time" : "as fast as possible");
  return RenderChart(title, {latency, throughput});
}

}  // namespace gmmscore::load
