// Backend names: the CUDA kernels' suffix is parsed whether or not this
// build or machine has CUDA, and bad names say what is expected.
#include "kernels/backends/stats_backend_factory.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

TEST(StatsBackendFactoryTest, NamesAndKernelSuffixes) {
  auto cpu = CreateStatsBackend("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->name(), "cpu");
  for (const std::string name : {"cuda/fp32", "cuda/tf32x3", "cuda:0/tf32x3", "cuda:0", "cuda:all", "cuda:all/fp32"}) {
    const auto backend = CreateStatsBackend(name);
    // A CUDA build on a GPU machine makes one; elsewhere UNAVAILABLE, never a parse error.
    EXPECT_TRUE(backend.ok() || backend.status().code() == absl::StatusCode::kUnavailable) << name << ": "
                                                                                             << backend.status();
  }
  for (const std::string name : {"cuda/fp16", "cuda/wgmma", "cuda:x", "cuda:0/", "cuda:0,0", "cuda:0,", "cuda:-1", "gpu"}) {
    const auto backend = CreateStatsBackend(name);
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_THAT(std::string(CreateStatsBackend("cuda/fp16").status().message()), HasSubstr("tf32x3"));
}

}  // namespace
}  // namespace gmmscore
