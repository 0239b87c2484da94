#include "server/server_config.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// --devices 0,2,0 on a host of three GPUs.
DeviceList ThreeSchedulers() {
  return *ParseDeviceList("0,2,0", "cuda", 3);
}

TEST(ApplyModelConfigsTest, DevicesPlaceModelsOnEverySchedulerOfTheirGpus) {
  v1::ServerConfig config;
  v1::ModelConfig* big = config.add_models();
  big->set_name("big");
  big->add_devices(2);
  v1::ModelConfig* small = config.add_models();
  small->set_name("small");
  small->add_devices(0);
  v1::ModelConfig* by_backend = config.add_models();
  by_backend->set_name("by_backend");
  by_backend->set_backend("cuda:2");
  v1::ModelConfig* anywhere = config.add_models();
  anywhere->set_name("anywhere");
  anywhere->set_backend("cuda");
  RepositoryOptions options;
  ASSERT_TRUE(ApplyModelConfigs(config, ThreeSchedulers(), 4096, &options).ok());
  EXPECT_EQ(options.placement["big"], (std::vector<int>{1}));
  EXPECT_EQ(options.placement["small"], (std::vector<int>{0, 2}));  // GPU 0 has two schedulers
  EXPECT_EQ(options.placement["by_backend"], (std::vector<int>{1}));
  EXPECT_EQ(options.placement.count("anywhere"), 0u);  // everywhere
}

TEST(ApplyModelConfigsTest, PlacementsOutsideTheDevicesAreRefusedNamingTheModel) {
  auto refused = [](const v1::ModelConfig& model) {
    v1::ServerConfig config;
    *config.add_models() = model;
    RepositoryOptions options;
    return ApplyModelConfigs(config, ThreeSchedulers(), 4096, &options);
  };
  v1::ModelConfig absent;
  absent.set_name("m");
  absent.add_devices(1);  // GPU 1 is not in --devices
  absl::Status status = refused(absent);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "model 'm'")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "device 1")) << status;

  v1::ModelConfig both;
  both.set_name("m");
  both.set_backend("cuda:0");
  both.add_devices(0);
  EXPECT_TRUE(absl::IsInvalidArgument(refused(both)));

  v1::ModelConfig other;
  other.set_name("m");
  other.set_backend("cpu");
  status = refused(other);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "cuda:0,cuda:2,cuda:0")) << status;
}

TEST(ApplyModelConfigsTest, OneDeviceKeepsTheBackendCheck) {
  v1::ServerConfig config;
  config.add_models()->set_name("m");
  config.mutable_models(0)->set_backend("cuda:1");
  RepositoryOptions options;
  EXPECT_TRUE(absl::IsInvalidArgument(ApplyModelConfigs(config, "cuda:0", 4096, &options)));
  EXPECT_TRUE(ApplyModelConfigs(config, "cuda:1", 4096, &options).ok());
  EXPECT_TRUE(options.placement.empty());
}

}  // namespace
}  // namespace gmmscore
