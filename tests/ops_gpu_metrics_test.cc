// GPU gauges through NVML loaded at runtime: with a stand-in
// libnvidia-ml (tests/fake_nvml.cc, fixed answers) the monitor reads device
// 0 and /metrics text carries gmmscore_gpu_* with those values; a missing
// library or device is a clear error and no gauges.
#include <string>

#include "gtest/gtest.h"
#include "server/gpu_monitor.h"
#include "server/server_metrics.h"
#include "tests/ops_test_util.h"

namespace gmmscore {
namespace {

TEST(OpsGpuMetricsTest, MissingLibraryIsNotFound) {
  absl::StatusOr<std::unique_ptr<GpuMonitor>> gpu =
      GpuMonitor::Open(0, "libgmmscore-no-such-nvml.so.1");
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kNotFound) << gpu.status();
}

TEST(OpsGpuMetricsTest, MissingDeviceIsUnavailable) {
  absl::StatusOr<std::unique_ptr<GpuMonitor>> gpu = GpuMonitor::Open(3, GMMSCORE_FAKE_NVML);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable) << gpu.status();
}

TEST(OpsGpuMetricsTest, GaugesComeFromNvml) {
  absl::StatusOr<std::unique_ptr<GpuMonitor>> gpu = GpuMonitor::Open(0, GMMSCORE_FAKE_NVML);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  absl::StatusOr<GpuSample> sample = (*gpu)->Read();
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->memory_total_bytes, 80ull << 30);
  EXPECT_EQ(sample->memory_used_bytes, 3ull << 30);
  EXPECT_EQ(sample->gpu_utilization_percent, 42u);

  ServerMetrics metrics;
  const std::string with = metrics.Render({.backend = "cuda:0", .gpus = {gpu->get()}});
  EXPECT_EQ(MetricValue(with, "gmmscore_gpu_memory_used_bytes{gpu=\"0\"}"), 3.0 * (1 << 30));
  EXPECT_EQ(MetricValue(with, "gmmscore_gpu_memory_total_bytes{gpu=\"0\"}"), 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(MetricValue(with, "gmmscore_gpu_utilization_ratio{gpu=\"0\"}"), 0.42);
  EXPECT_DOUBLE_EQ(MetricValue(with, "gmmscore_gpu_memory_utilization_ratio{gpu=\"0\"}"), 0.17);
  // The device's identity, the name's quote escaped as the text format asks.
  EXPECT_EQ((*gpu)->uuid(), "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(MetricValue(with, "gmmscore_gpu_info{gpu=\"0\",uuid=\"GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\","
                              "name=\"NVIDIA H100 80GB HBM3 \\\"fake\\\"\"}"),
            1.0);
  EXPECT_LT(with.find("# TYPE gmmscore_gpu_memory_used_bytes gauge"),
            with.find("gmmscore_gpu_memory_used_bytes{"));
  // Several GPUs: each family is declared once, with a sample per GPU (the
  // fake NVML has one device: it stands for two here).
  const std::string two = metrics.Render({.backend = "cuda:0,cuda:0", .gpus = {gpu->get(), gpu->get()}});
  const std::string type_line = "# TYPE gmmscore_gpu_memory_used_bytes gauge";
  ASSERT_NE(two.find(type_line), std::string::npos);
  EXPECT_EQ(two.find(type_line, two.find(type_line) + 1), std::string::npos);
  size_t samples = 0;
  for (size_t at = two.find("gmmscore_gpu_memory_used_bytes{"); at != std::string::npos;
       at = two.find("gmmscore_gpu_memory_used_bytes{", at + 1)) {
    ++samples;
  }
  EXPECT_EQ(samples, 2u);
  const std::string without = metrics.Render({.backend = "cpu"});
  EXPECT_EQ(without.find("gmmscore_gpu_"), std::string::npos);
}

}  // namespace
}  // namespace gmmscore
