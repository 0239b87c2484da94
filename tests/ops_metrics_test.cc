// /metrics after a known amount of traffic: request counts by method and
// status code, chunks received and answered, frames scored, chunk latency
// count, active streams, per-model memory, backend; the exposition format
// (HELP/TYPE before samples, cumulative buckets); 404 off /metrics.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "kernels/core/version.h"
#include "proto/wire_convert.h"
#include "server/metrics_exposition.h"
#include "tests/ops_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr char kStream[] =
    "{grpc_service=\"gmmscore.v1.AcousticScorer\",grpc_method=\"StreamScore\"";
constexpr char kScore[] = "{grpc_service=\"gmmscore.v1.AcousticScorer\",grpc_method=\"Score\"";

TEST(OpsMetricsTest, ValuesAfterKnownTraffic) {
  DaemonOptions options;
  options.ops.metrics_listen = "127.0.0.1:0";
  auto daemon = TestDaemon::Start(
      {{"m", {.num_states = 20, .min_gaussians = 2, .max_gaussians = 2, .dim = 8, .seed = 1}}},
      options);
  ASSERT_NE(daemon, nullptr);
  const int port = daemon->daemon().ops().metrics_port();
  ASSERT_GT(port, 0);
  const FloatMatrix frames = TestFeatures(daemon->model("m"), 10, 2);

  // 3 streams x 4 chunks x 10 frames, all OK.
  std::unique_ptr<Client> client = daemon->NewClient();
  for (int s = 0; s < 3; ++s) {
    v1::StreamConfig config;
    config.add_models("m");
    auto session = client->StartStream(config);
    for (int c = 0; c < 4; ++c) ASSERT_TRUE((*session)->Push(frames.view()).ok());
    for (int c = 0; c < 4; ++c) ASSERT_TRUE((*session)->Next().ok());
    ASSERT_TRUE((*session)->CloseSend().ok());
    ASSERT_TRUE((*session)->Finish().ok());
  }
  // 2 Score requests of 10 frames OK, 1 naming an unknown model.
  v1::ScoreRequest request;
  request.add_models("m");
  FeaturesToProto(frames.view(), request.mutable_features());
  ASSERT_TRUE(client->Score(request).ok());
  ASSERT_TRUE(client->Score(request).ok());
  request.set_models(0, "nope");
  ASSERT_EQ(client->Score(request).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(daemon->WaitUntilIdle(absl::Seconds(5)));

  int code = 0;
  const std::string text = HttpGet(port, "/metrics", &code);
  ASSERT_EQ(code, 200) << text;
  auto value = [&](const std::string& series) { return MetricValue(text, series); };
  EXPECT_NE(text.find(absl::StrCat("gmmscore_build_info{version=\"", GmmscoreVersion(), "\",backend=\"")),
            std::string::npos)
      << text.substr(0, 400);
  EXPECT_EQ(value(std::string("gmmscore_requests_total") + kStream + ",grpc_code=\"OK\"}"), 3);
  EXPECT_EQ(value(std::string("gmmscore_requests_total") + kScore + ",grpc_code=\"OK\"}"), 2);
  EXPECT_EQ(value(std::string("gmmscore_requests_total") + kScore + ",grpc_code=\"NOT_FOUND\"}"),
            1);
  EXPECT_EQ(value(std::string("gmmscore_chunks_received_total") + kStream + "}"), 12);
  EXPECT_EQ(value(std::string("gmmscore_chunks_answered_total") + kStream + "}"), 12);
  EXPECT_EQ(value(std::string("gmmscore_chunks_received_total") + kScore + "}"), 3);
  EXPECT_EQ(value(std::string("gmmscore_chunks_answered_total") + kScore + "}"), 2);
  EXPECT_EQ(value("gmmscore_frames_scored_total"), 3 * 4 * 10 + 2 * 10);
  EXPECT_EQ(value("gmmscore_chunk_latency_seconds_count"), 12 + 2);
  EXPECT_EQ(value("gmmscore_chunk_latency_seconds_bucket{le=\"+Inf\"}"), 12 + 2);
  EXPECT_GT(value("gmmscore_chunk_latency_seconds_sum"), 0);
  EXPECT_EQ(value("gmmscore_active_streams"), 0);
  EXPECT_EQ(value("gmmscore_queued_jobs"), 0);
  EXPECT_EQ(value("gmmscore_models_served"), 1);
  EXPECT_EQ(value("gmmscore_model_resident_bytes{model=\"m\",version=\"1\"}"),
            daemon->daemon().repository().models()[0].resident_bytes());
  // Per model: 3 streams of 40 frames, 2 requests of 10 (the unknown
  // model's request counts nowhere).
  EXPECT_EQ(value("gmmscore_model_streams_total{model=\"m\",version=\"1\"}"), 3);
  EXPECT_EQ(value("gmmscore_model_requests_total{model=\"m\",version=\"1\"}"), 2);
  EXPECT_EQ(value("gmmscore_model_frames_total{model=\"m\",version=\"1\"}"), 3 * 4 * 10 + 2 * 10);
  EXPECT_EQ(value("gmmscore_backend_info{backend=\"" +
                  daemon->daemon().repository().device() + "\"}"),
            1);
  // Format: each family's TYPE comes before its first sample.
  EXPECT_LT(text.find("# TYPE gmmscore_requests_total counter"),
            text.find("gmmscore_requests_total{"));
  EXPECT_LT(text.find("# TYPE gmmscore_chunk_latency_seconds histogram"),
            text.find("gmmscore_chunk_latency_seconds_bucket"));

  HttpGet(port, "/other", &code);
  EXPECT_EQ(code, 404);
  HttpRequest(port, "POST", "/metrics", &code);
  EXPECT_EQ(code, 405);
  // HEAD answers 200 with headers only.
  EXPECT_EQ(HttpRequest(port, "HEAD", "/metrics", &code), "");
  EXPECT_EQ(code, 200);
}


// The per-backend-call histograms are fed by the scheduler: one stream of 3
// chunks sent one at a time (each its own backend call: the backend is idle
// when it arrives) and one 7-frame Score request make 4 calls of 10, 10, 10
// and 7 frames, one chunk and one stream each.
TEST(OpsMetricsTest, SchedulerHistogramsAfterKnownTraffic) {
  DaemonOptions options;
  options.ops.metrics_listen = "127.0.0.1:0";
  auto daemon = TestDaemon::Start(
      {{"m", {.num_states = 20, .min_gaussians = 2, .max_gaussians = 2, .dim = 8, .seed = 1}}},
      options);
  ASSERT_NE(daemon, nullptr);
  const int port = daemon->daemon().ops().metrics_port();
  std::unique_ptr<Client> client = daemon->NewClient();
  v1::StreamConfig config;
  config.add_models("m");
  auto session = client->StartStream(config);
  const FloatMatrix frames = TestFeatures(daemon->model("m"), 10, 2);
  for (int c = 0; c < 3; ++c) {
    ASSERT_TRUE((*session)->Push(frames.view()).ok());
    ASSERT_TRUE((*session)->Next().ok());
  }
  ASSERT_TRUE((*session)->Finish().ok());
  v1::ScoreRequest request;
  request.add_models("m");
  FeaturesToProto(TestFeatures(daemon->model("m"), 7, 3).view(), request.mutable_features());
  ASSERT_TRUE(client->Score(request).ok());

  // A call is reported just after its answers are handed over, and each
  // histogram at its own step of it: poll until every one has the 4 calls
  // (one of them alone could be read a step ahead of the others under load).
  std::string text;
  const absl::Time end = absl::Now() + absl::Seconds(30);
  auto all_reported = [&] {
    for (const char* series : {"gmmscore_batch_frames_count", "gmmscore_backend_score_seconds_count",
                               "gmmscore_queue_wait_seconds_count", "gmmscore_chunk_latency_seconds_count"}) {
      if (MetricValue(text, series) < 4) return false;
    }
    return true;
  };
  do {
    text = HttpGet(port, "/metrics");
  } while (!all_reported() && absl::Now() < end);
  auto value = [&](const std::string& series) { return MetricValue(text, series); };
  EXPECT_EQ(value("gmmscore_batch_frames_count"), 4);
  EXPECT_EQ(value("gmmscore_batch_frames_sum"), 37);
  EXPECT_EQ(value("gmmscore_batch_frames_bucket{le=\"8\"}"), 1);   // the 7-frame request
  EXPECT_EQ(value("gmmscore_batch_frames_bucket{le=\"16\"}"), 4);
  EXPECT_EQ(value("gmmscore_batch_chunks_count"), 4);
  EXPECT_EQ(value("gmmscore_batch_chunks_sum"), 4);
  EXPECT_EQ(value("gmmscore_batch_streams_sum"), 4);
  EXPECT_EQ(value("gmmscore_backend_score_seconds_count"), 4);
  EXPECT_GT(value("gmmscore_backend_score_seconds_sum"), 0);
  EXPECT_EQ(value("gmmscore_queue_wait_seconds_count"), 4);
  EXPECT_GE(value("gmmscore_queue_wait_seconds_sum"), 0);
  EXPECT_EQ(value("gmmscore_chunk_latency_seconds_count"), 4);
  EXPECT_EQ(value("gmmscore_queued_frames"), 0);
  EXPECT_EQ(value("gmmscore_jobs_rejected_total"), 0);
  EXPECT_EQ(value("gmmscore_overload_refusals_total"), 0);
  EXPECT_GT(value("gmmscore_max_queued_frames"), 0);
  // No GPU here (or no NVML on the CPU backend): no GPU gauges.
  if (daemon->daemon().repository().device() == "cpu") {
    EXPECT_EQ(text.find("gmmscore_gpu_"), std::string::npos);
  }
}

TEST(OpsMetricsTest, LiveStreamsAreCounted) {
  DaemonOptions options;
  options.ops.metrics_listen = "127.0.0.1:0";
  auto daemon = TestDaemon::Start(
      {{"m", {.num_states = 20, .min_gaussians = 2, .max_gaussians = 2, .dim = 8, .seed = 1}}},
      options);
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = daemon->NewClient();
  v1::StreamConfig config;
  config.add_models("m");
  auto first = client->StartStream(config);
  auto second = client->StartStream(config);
  const FloatMatrix frames = TestFeatures(daemon->model("m"), 5, 2);
  ASSERT_TRUE((*first)->Push(frames.view()).ok());
  ASSERT_TRUE((*second)->Push(frames.view()).ok());
  ASSERT_TRUE((*first)->Next().ok());
  ASSERT_TRUE((*second)->Next().ok());
  const std::string text = HttpGet(daemon->daemon().ops().metrics_port(), "/metrics");
  EXPECT_EQ(MetricValue(text, "gmmscore_active_streams"), 2);
  // One client: both streams on its one connection.
  EXPECT_EQ(MetricValue(text, "gmmscore_stream_connections"), 1);
  EXPECT_EQ(MetricValue(text, "gmmscore_stream_connection_streams_max"), 2);
  // The same two calls, by completion queue: each queue's own sample.
  const std::vector<int64_t> calls = daemon->daemon().stream_calls_per_queue();
  ASSERT_GE(calls.size(), 2u);
  int64_t exported = 0;
  for (size_t queue = 0; queue < calls.size(); ++queue) {
    const double value =
        MetricValue(text, absl::StrCat("gmmscore_stream_queue_calls{queue=\"", queue, "\"}"));
    EXPECT_EQ(value, static_cast<double>(calls[queue])) << "queue " << queue;
    exported += static_cast<int64_t>(value);
  }
  EXPECT_EQ(exported, 2);
}

TEST(OpsMetricsTest, ExpositionEscapesAndSpellsValues) {
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Histogram histogram({1, 2});
  histogram.Observe(0.5);
  histogram.Observe(1.5);
  histogram.Observe(7);
  MetricsWriter out;
  histogram.WriteTo(&out, "h", {{"k", "v"}});
  EXPECT_EQ(out.Take(),
            "h_bucket{k=\"v\",le=\"1\"} 1\nh_bucket{k=\"v\",le=\"2\"} 2\n"
            "h_bucket{k=\"v\",le=\"+Inf\"} 3\nh_sum{k=\"v\"} 9\nh_count{k=\"v\"} 3\n");
}

}  // namespace
}  // namespace gmmscore
