#include "client/load/svg_plot.h"

#include "client/load/load_report.h"
#include "gtest/gtest.h"

namespace gmmscore::load {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(NiceTicksTest, CoverTheRangeWithRoundSteps) {
  EXPECT_EQ(NiceTicks(0, 47, 5), std::vector<double>({0, 10, 20, 30, 40, 50}));
  const std::vector<double> unit = NiceTicks(0, 1, 5);
  ASSERT_EQ(unit.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(unit[i], 0.2 * i, 1e-12);
  const std::vector<double> big = NiceTicks(0, 23000, 6);
  EXPECT_EQ(big.front(), 0);
  EXPECT_GE(big.back(), 23000);
  EXPECT_EQ(big[1], 5000);
  EXPECT_GE(NiceTicks(5, 5, 4).size(), 2u);  // a flat range still has an axis
}

TEST(NiceTicksTest, LogTicks) {
  // 0.7 .. 80 ms: three decades, 1-2-5 steps.
  EXPECT_EQ(LogTicks(0.7, 80), std::vector<double>({0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100}));
  // 1 ms .. 5 s: powers of ten only.
  EXPECT_EQ(LogTicks(1, 5000), std::vector<double>({1, 10, 100, 1000, 10000}));
}

LoadReport TwoPoints() {
  LoadReport report;
  report.run = {.server = "x:1", .models = "am", .device = "cpu", .realtime = true,
                .chunk_frames = 10, .slo_ms = 50};
  for (int n : {8, 16}) {
    PointResult p;
    p.streams = n;
    p.channels = 1;
    p.cq_threads = 3;
    p.chunk_frames = 10;
    p.offered_frames_per_s = n * 100;
    p.metrics.frames_per_s = n * 99;
    p.metrics.latency_ms = {.count = 10, .mean = 3, .p50 = 2, .p90 = 4, .p95 = 5, .p99 = 6.0 * n,
                            .max = 9.0 * n};
    p.stream_status["OK"] = n - 1;
    p.stream_status["RESOURCE_EXHAUSTED"] = 1;
    p.streams_failed = 1;
    p.first_error = "RESOURCE_EXHAUSTED: \"full\"";
    report.points.push_back(p);
  }
  report.search = CapacitySearch{.best = 8, .first_failing = 16};
  return report;
}

TEST(SvgPlotTest, CapacityPlotHasBothPanelsSeriesAndRules) {
  const std::string svg = CapacityPlotSvg(TwoPoints());
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // p50, p90, p99, max, answered, offered.
  EXPECT_EQ(Count(svg, "<polyline"), 6);
  EXPECT_NE(svg.find("SLO 50 ms"), std::string::npos);
  EXPECT_EQ(Count(svg, "capacity 8"), 2);
  EXPECT_NE(svg.find("Chunk latency"), std::string::npos);
  EXPECT_NE(svg.find("Throughput"), std::string::npos);
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
}

TEST(SvgPlotTest, EscapesText) {
  const std::string svg = RenderChart("a < b & \"c\"", {Panel{.title = "t"}});
  EXPECT_NE(svg.find("a &lt; b &amp; &quot;c&quot;"), std::string::npos);
}

TEST(LoadReportTest, CapacityOfPoints) {
  auto point = [](int streams, bool pass) {
    PointResult p;
    p.streams = streams;
    p.within_slo = pass;
    return p;
  };
  // 500 passed once but 481 failed: noise above the knee does not count.
  const CapacitySearch c =
      CapacityOf({point(200, true), point(475, true), point(481, false), point(500, true)});
  EXPECT_EQ(c.best, 475);
  EXPECT_EQ(c.first_failing, 481);
  EXPECT_EQ(CapacityOf({point(8, true)}).first_failing, 0);
  EXPECT_EQ(CapacityOf({point(8, false)}).best, 0);
}

TEST(LoadReportTest, JsonAndCsv) {
  const LoadReport report = TwoPoints();
  const std::string json = ReportJson(report);
  EXPECT_NE(json.find("\"streams\":16"), std::string::npos) << json;
  EXPECT_NE(json.find("\"RESOURCE_EXHAUSTED\":1"), std::string::npos);
  EXPECT_NE(json.find("\"first_error\":\"RESOURCE_EXHAUSTED: \\\"full\\\"\""), std::string::npos);
  EXPECT_NE(json.find("\"max_streams_within_slo\":8"), std::string::npos);
  EXPECT_NE(json.find("\"p99\":96"), std::string::npos);
  EXPECT_EQ(Count(json, "{"), Count(json, "}"));
  EXPECT_EQ(Count(json, "["), Count(json, "]"));
  EXPECT_EQ(json.find(",}"), std::string::npos);
  EXPECT_EQ(json.find(",]"), std::string::npos);
  EXPECT_EQ(json.find("{,"), std::string::npos);

  const std::string csv = ReportCsv(report);
  const size_t first_newline = csv.find('\n');
  const std::string header = csv.substr(0, first_newline);
  const std::string row = csv.substr(first_newline + 1, csv.find('\n', first_newline + 1) -
                                                             first_newline - 1);
  EXPECT_EQ(Count(header, ","), Count(row, ",")) << header << "\n" << row;
  EXPECT_EQ(Count(csv, "\n"), 3);
  EXPECT_EQ(row.rfind("8,1,1,10,", 0), 0u) << row;

  // The CSV reads back into what a plot needs.
  absl::StatusOr<std::vector<PointResult>> again = ReadPointsCsv(csv);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ((*again)[1].streams, 16);
  EXPECT_EQ((*again)[1].chunk_frames, 10);
  EXPECT_TRUE((*again)[1].realtime);
  EXPECT_DOUBLE_EQ((*again)[1].metrics.latency_ms.p99, 96);
  EXPECT_DOUBLE_EQ((*again)[1].metrics.frames_per_s, 16 * 99);
  EXPECT_EQ((*again)[1].streams_failed, 1);
  EXPECT_EQ((*again)[1].cq_threads, 3);
  EXPECT_NE(json.find("\"cq_threads\":3"), std::string::npos) << json;
  EXPECT_FALSE(ReadPointsCsv("streams,channels\n1\n").ok());

  const std::string text = FormatPoint(report.points[1], 50);
  EXPECT_NE(text.find("p99 96.00"), std::string::npos) << text;
  EXPECT_NE(text.find("RESOURCE_EXHAUSTED 1"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
}

}  // namespace
}  // namespace gmmscore::load
