#include "server/health_reporter.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// Records what the health service is told, in order.
class RecordingHealthService : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& name, bool serving) override {
    calls.emplace_back(name, serving);
    status[name] = serving;
  }
  void SetServingStatus(bool serving) override { calls.emplace_back("*", serving); }

  std::vector<std::pair<std::string, bool>> calls;
  std::map<std::string, bool> status;
};

TEST(HealthReporterTest, AModelServesOnlyWhileReachableAndEachChangeIsSentOnce) {
  RecordingHealthService service;
  HealthReporter health(&service);
  health.SetModel("a", true);
  health.SetModel("b", true);
  health.SetServing(true);
  EXPECT_TRUE(service.status["a"]);
  EXPECT_TRUE(service.status[""]);
  EXPECT_TRUE(service.status[HealthReporter::kScorerService]);

  bool b_reachable = true, can_serve = true;
  health.SetDeviceHealth({.model_reachable = [&](const std::string& name) { return name != "b" || b_reachable; },
                          .server_can_serve = [&] { return can_serve; }});
  const size_t before = service.calls.size();
  health.Refresh();  // nothing changed: nothing sent (watchers get no duplicates)
  EXPECT_EQ(service.calls.size(), before);

  b_reachable = false;
  health.Refresh();
  EXPECT_FALSE(service.status["b"]);
  EXPECT_TRUE(service.status["a"]);
  EXPECT_TRUE(service.status[""]);
  ASSERT_EQ(service.calls.size(), before + 1);  // only b's change
  // A reload of an unreachable model stays NOT_SERVING.
  health.SetModel("b", true);
  EXPECT_FALSE(service.status["b"]);

  can_serve = false;
  health.Refresh();
  EXPECT_FALSE(service.status[""]);
  EXPECT_FALSE(service.status[HealthReporter::kScorerService]);
  b_reachable = true;
  can_serve = true;
  health.Refresh();
  EXPECT_TRUE(service.status["b"]);
  EXPECT_TRUE(service.status[""]);
  // An unloaded model stays NOT_SERVING however reachable.
  health.SetModel("a", false);
  health.Refresh();
  EXPECT_FALSE(service.status["a"]);
}

// Unloading the last model a healthy device holds leaves the server unable
// to serve: the overall status says so at once, not at the next device
// transition; a load that makes it able to serve again says so too. Before
// the server starts, and once it drains, loads leave it NOT_SERVING.
TEST(HealthReporterTest, LoadsAndUnloadsJudgeTheOverallStatusAgain) {
  RecordingHealthService service;
  HealthReporter health(&service);
  bool can_serve = true;
  health.SetDeviceHealth({.model_reachable = [](const std::string&) { return true; },
                          .server_can_serve = [&] { return can_serve; }});
  health.SetModel("a", true);
  EXPECT_FALSE(service.status[""]);  // not started: NOT_SERVING whatever is loaded
  health.SetServing(true);
  EXPECT_TRUE(service.status[""]);
  can_serve = false;  // "a" was the last model on a healthy device
  health.SetModel("a", false);
  EXPECT_FALSE(service.status["a"]);
  EXPECT_FALSE(service.status[""]);
  EXPECT_FALSE(service.status[HealthReporter::kScorerService]);
  ASSERT_GE(service.calls.size(), 3u);
  EXPECT_EQ(service.calls[service.calls.size() - 3].first, "a");  // the model first
  can_serve = true;
  health.SetModel("b", true);
  EXPECT_TRUE(service.status["b"]);
  EXPECT_TRUE(service.status[""]);
  EXPECT_TRUE(service.status[HealthReporter::kScorerService]);
  health.BeginDrain();
  health.SetModel("c", false);
  EXPECT_FALSE(service.status[""]);
}

TEST(HealthReporterTest, DrainTellsModelsFirstAndNothingServesAfterIt) {
  RecordingHealthService service;
  HealthReporter health(&service);
  health.SetModel("a", true);
  health.SetServing(true);
  bool can_serve = true;
  health.SetDeviceHealth({.model_reachable = {}, .server_can_serve = [&] { return can_serve; }});
  health.BeginDrain();
  const size_t drained = service.calls.size();
  ASSERT_GE(drained, 3u);
  EXPECT_EQ(service.calls[drained - 3], std::make_pair(std::string("a"), false));
  EXPECT_EQ(service.calls[drained - 1], std::make_pair(std::string(""), false));
  // Device recoveries, loads and SetServing after the drain change nothing.
  health.Refresh();
  health.SetModel("a", true);
  health.SetServing(true);
  EXPECT_EQ(service.calls.size(), drained);
  EXPECT_FALSE(service.status["a"]);
  EXPECT_FALSE(service.status[""]);
}

TEST(HealthReporterTest, ReservedNamesAreNeverModelsAndNoServiceReportsNothing) {
  RecordingHealthService service;
  HealthReporter health(&service);
  health.SetModel("", true);
  health.SetModel(HealthReporter::kScorerService, true);
  EXPECT_TRUE(service.calls.empty());
  HealthReporter nowhere(nullptr);
  nowhere.SetModel("a", true);
  nowhere.SetServing(true);
  nowhere.SetDeviceHealth({});
  nowhere.Refresh();
  nowhere.BeginDrain();
  nowhere.Shutdown();
}

}  // namespace
}  // namespace gmmscore
