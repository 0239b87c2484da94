// A small SVG line-chart writer (no dependencies) and the capacity plot of
// a load test: chunk latency percentiles against streams above, throughput
// against streams below.
//
//   std::string svg = CapacityPlotSvg(report);          // from load_report.h
//   std::string svg = RenderChart("title", {panel});    // any line chart
//
// Thread safety: pure functions.
#ifndef GMMSCORE_CLIENT_LOAD_SVG_PLOT_H_
#define GMMSCORE_CLIENT_LOAD_SVG_PLOT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/load/load_report.h"

namespace gmmscore::load {

struct Series {
  std::string name;
  std::string color;  // any SVG color: "#1f77b4"
  std::vector<std::pair<double, double>> points;  // (x, y); drawn sorted by x
  bool dashed = false;
  bool markers = true;
};

// A straight reference line across a panel, labelled.
struct Rule {
  double value = 0;
  std::string label;
  std::string color = "#888";
};

struct Panel {
  std::string title;
  std::string x_label, y_label;
  std::vector<Series> series;
  std::vector<Rule> horizontal;  // y = value
  std::vector<Rule> vertical;    // x = value
  // Logarithmic y axis (values <= 0 are left out): latencies that span
  // milliseconds to seconds once a server is overloaded.
  bool log_y = false;
};

// "Nice" axis ticks covering [lo, hi]: about `count` multiples of 1, 2 or 5
// times a power of ten, the first <= lo, the last >= hi.
std::vector<double> NiceTicks(double lo, double hi, int count);
// Ticks of a log axis covering [lo, hi] (both > 0): 1-2-5 steps per decade
// when few decades are spanned, else powers of ten.
std::vector<double> LogTicks(double lo, double hi);

// Panels stacked top to bottom, each with axes from 0 (or the data's
// minimum, if negative; log axes from the decade below the minimum) to a
// nice maximum, grid, tick labels and a legend.
std::string RenderChart(const std::string& title, const std::vector<Panel>& panels);

// The capacity plot of `report` (x = streams; points in the order of x).
std::string CapacityPlotSvg(const LoadReport& report);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_SVG_PLOT_H_
