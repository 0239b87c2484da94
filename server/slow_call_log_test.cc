#include "server/slow_call_log.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/log.h"

namespace gmmscore {
namespace {

absl::Mutex warnings_mu;
std::vector<std::string>* warnings ABSL_GUARDED_BY(warnings_mu) = nullptr;

void KeepWarning(LogLevel level, absl::string_view message) {
  absl::MutexLock lock(&warnings_mu);
  if (warnings != nullptr && level == LogLevel::kWarning) warnings->emplace_back(message);
}

class SlowCallLogTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::MutexLock lock(&warnings_mu);
    warnings = &lines_;
    SetLogObserver(&KeepWarning);
  }
  void TearDown() override {
    SetLogObserver(nullptr);
    absl::MutexLock lock(&warnings_mu);
    warnings = nullptr;
  }
  std::vector<std::string> Lines() {
    absl::MutexLock lock(&warnings_mu);
    return lines_;
  }
  static GroupReport Call(absl::Duration took) {
    return {.frames = 1500, .jobs = 150, .origins = 149, .score_time = took};
  }

  std::vector<std::string> lines_;
};

TEST_F(SlowCallLogTest, LogsASlowCallWithItsBatch) {
  SlowCallLog slow({.device = "cuda:0"});
  slow.Observe(Call(absl::Milliseconds(3)));
  slow.Observe(Call(absl::Microseconds(49999)));
  EXPECT_TRUE(Lines().empty());
  slow.Observe(Call(absl::Milliseconds(143)));
  ASSERT_EQ(Lines().size(), 1u);
  EXPECT_EQ(Lines()[0],
            "backend call on cuda:0 took 143 ms: 1500 frames, 150 chunks of 149 streams; 0 more "
            "calls over 50 ms since the last such line");
  EXPECT_EQ(slow.slow_calls(), 1);
}

TEST_F(SlowCallLogTest, OneLineAnIntervalCountingTheOthers) {
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  {
    SlowCallLog slow({.device = "cuda:1", .clock = [&now] { return now; }});
    for (int i = 0; i < 5; ++i) {
      slow.Observe(Call(absl::Milliseconds(60 + i)));
      now += absl::Milliseconds(100);
    }
    ASSERT_EQ(Lines().size(), 1u);
    EXPECT_THAT(Lines()[0], testing::HasSubstr("on cuda:1 took 60 ms"));
    EXPECT_EQ(slow.slow_calls(), 5);
    now += absl::Milliseconds(500);  // a second after the line
    slow.Observe(Call(absl::Milliseconds(70)));
    ASSERT_EQ(Lines().size(), 2u);
    EXPECT_THAT(Lines()[1], testing::HasSubstr("took 70 ms"));
    EXPECT_THAT(Lines()[1], testing::HasSubstr("; 4 more calls over 50 ms since the last"));
    slow.Observe(Call(absl::Milliseconds(80)));
    slow.Observe(Call(absl::Milliseconds(1)));  // not slow: not counted
    EXPECT_EQ(Lines().size(), 2u);
    EXPECT_EQ(slow.slow_calls(), 7);
  }
  // The last slow call no line counted, when the log goes.
  ASSERT_EQ(Lines().size(), 3u);
  EXPECT_EQ(Lines()[2], "backend calls on cuda:1: 1 more over 50 ms since the last such line");
}

TEST_F(SlowCallLogTest, NothingLeftNothingSaidAtTheEnd) {
  { SlowCallLog slow({.device = "cuda:0"}); }
  EXPECT_TRUE(Lines().empty());
}

}  // namespace
}  // namespace gmmscore
