#include "server/device_list.h"

#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(DeviceListTest, NoListIsTheOneDeviceOfTheBackend) {
  absl::StatusOr<DeviceList> list = ParseDeviceList("", "cuda:3", 4);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->backends, (std::vector<std::string>{"cuda:3"}));
  EXPECT_EQ(list->ordinals, (std::vector<int>{3}));
  list = ParseDeviceList("", "auto", 0);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->backends, (std::vector<std::string>{"auto"}));
}

TEST(DeviceListTest, AllIsEveryGpuAndListsMayRepeat) {
  absl::StatusOr<DeviceList> list = ParseDeviceList("all", "auto", 3);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->backends, (std::vector<std::string>{"cuda:0", "cuda:1", "cuda:2"}));
  list = ParseDeviceList(" 2, 0,2 ", "cuda", 3);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->backends, (std::vector<std::string>{"cuda:2", "cuda:0", "cuda:2"}));
  EXPECT_EQ(list->ordinals, (std::vector<int>{2, 0, 2}));
  EXPECT_EQ(list->IndexesOf(2), (std::vector<int>{0, 2}));
  EXPECT_TRUE(list->IndexesOf(1).empty());
  // Several CPU backends, for the multi-scheduler daemon without a GPU.
  list = ParseDeviceList("0,1", "cpu", 0);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->backends, (std::vector<std::string>{"cpu", "cpu"}));
  list = ParseDeviceList("0,1", "auto", 0);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->backends, (std::vector<std::string>{"cpu", "cpu"}));
}

TEST(DeviceListTest, BadListsNameTheFlag) {
  for (const auto& [devices, backend, gpus] : std::vector<std::tuple<const char*, const char*, int>>{
           {"all", "cpu", 0},     // no GPU backend
           {"all", "cuda", 0},    // no GPU answers
           {"0,2", "cuda", 2},    // GPU 2 absent
           {"0,,1", "cuda", 2},   // empty entry
           {"-1", "cpu", 0},      // negative
           {"one", "cuda", 2},    // not a number
           {"0,1", "cuda:1", 2},  // a list with cuda:N
           {"0", "tpu", 2}}) {    // unknown backend
    const absl::StatusOr<DeviceList> list = ParseDeviceList(devices, backend, gpus);
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument) << devices << " " << backend;
    const absl::string_view message = list.status().message();
    EXPECT_TRUE(absl::StrContains(message, "--devices") || absl::StrContains(message, "backend"))
        << list.status();
  }
}

}  // namespace
}  // namespace gmmscore
