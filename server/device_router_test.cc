#include "server/device_router.h"
#include "server/device_prober.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"
#include "tests/forwarding_backend.h"

namespace gmmscore {
namespace {

TEST(ChooseLeastLoadedTest, AssignedWeightFirstThenQueueThenBusyTimeThenIndex) {
  std::vector<DeviceLoad> loads(3);
  EXPECT_EQ(ChooseLeastLoaded({0, 1, 2}, loads), 0);  // all equal: the lowest index
  loads[0].assigned_weight = 2;
  EXPECT_EQ(ChooseLeastLoaded({0, 1, 2}, loads), 1);
  loads[1].queued_frames = 100;
  EXPECT_EQ(ChooseLeastLoaded({0, 1, 2}, loads), 2);
  loads[2].queued_frames = 100;
  loads[1].recent_busy_seconds = 0.5;
  loads[2].recent_busy_seconds = 0.25;
  EXPECT_EQ(ChooseLeastLoaded({0, 1, 2}, loads), 2);
  // Weight outranks both: a device with fewer streams wins however busy.
  loads[1].assigned_weight = 0;
  loads[2].assigned_weight = 1;
  EXPECT_EQ(ChooseLeastLoaded({0, 1, 2}, loads), 1);
  // Only candidates count.
  EXPECT_EQ(ChooseLeastLoaded({0, 2}, loads), 2);
  EXPECT_EQ(ChooseLeastLoaded({0}, loads), 0);
}

class DeviceRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int d = 0; d < 3; ++d) {
      backends_.push_back(CreateCpuBackend({.num_threads = 1}));
      schedulers_.push_back(std::make_unique<BatchScheduler>(backends_.back().get(), BatchSchedulerOptions{}));
    }
    auto model = GenerateSyntheticModel({.num_states = 3, .min_gaussians = 1, .max_gaussians = 2, .dim = 4, .seed = 1});
    ASSERT_TRUE(model.ok());
    model_ = std::make_shared<const DiagGmmModel>(*std::move(model));
  }
  void TearDown() override {
    for (auto& scheduler : schedulers_) scheduler->Stop();
  }

  // A model named `name` with a replica on each of `devices` (of 3).
  std::shared_ptr<const ServedModel> Placed(const std::string& name, const std::vector<int>& devices) {
    auto served = std::make_shared<ServedModel>();
    served->name = name;
    served->replicas.resize(3);
    for (int d : devices) {
      auto prepared = backends_[d]->Prepare(model_);
      EXPECT_TRUE(prepared.ok());
      served->replicas[d] = *prepared;
    }
    served->prepared = served->replicas[devices.front()];
    return served;
  }

  DeviceRouter MakeRouter() {
    return DeviceRouter({schedulers_[0].get(), schedulers_[1].get(), schedulers_[2].get()},
                        {"gpu-a", "gpu-b", "gpu-c"});
  }

  std::vector<std::unique_ptr<ScoringBackend>> backends_;
  std::vector<std::unique_ptr<BatchScheduler>> schedulers_;
  std::shared_ptr<const DiagGmmModel> model_;
};

TEST_F(DeviceRouterTest, CommonDevicesAreWhereEveryModelHasAReplica) {
  auto a = Placed("a", {0, 1});
  auto b = Placed("b", {1, 2});
  auto c = Placed("c", {2});
  const std::vector<std::string> names = {"gpu-a", "gpu-b", "gpu-c"};
  EXPECT_EQ(*CommonDevices({a}, names), (std::vector<int>{0, 1}));
  EXPECT_EQ(*CommonDevices({a, b}, names), (std::vector<int>{1}));
  const absl::StatusOr<std::vector<int>> none = CommonDevices({a, c}, names);
  ASSERT_TRUE(absl::IsFailedPrecondition(none.status())) << none.status();
  EXPECT_TRUE(absl::StrContains(none.status().message(), "'a' on gpu-a, gpu-b; 'c' on gpu-c"))
      << none.status();
}

TEST_F(DeviceRouterTest, StreamsSpreadOverTheDevicesHoldingTheirModels) {
  DeviceRouter router = MakeRouter();
  auto everywhere = Placed("e", {0, 1, 2});
  auto two = Placed("t", {1, 2});
  std::vector<DeviceAssignment> held;
  // Six single-model streams: two a device.
  for (int i = 0; i < 6; ++i) {
    absl::StatusOr<DeviceAssignment> where = router.Assign({everywhere});
    ASSERT_TRUE(where.ok());
    held.push_back(*std::move(where));
  }
  for (int d = 0; d < 3; ++d) EXPECT_EQ(router.load(d).assigned_weight, 2) << d;
  // A two-model stream weighs 2, and goes only where both are.
  absl::StatusOr<DeviceAssignment> fused = router.Assign({everywhere, two});
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->device(), 1);
  EXPECT_EQ(router.load(1).assigned_weight, 4);
  // The next single-model streams avoid device 1 until it is level again.
  absl::StatusOr<DeviceAssignment> next = router.Assign({everywhere});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->device(), 0);
  // Released streams free their place (moved-from assignments hold nothing).
  DeviceAssignment moved = *std::move(fused);
  held.clear();
  EXPECT_EQ(router.load(1).assigned_weight, 2);
  moved = DeviceAssignment();
  EXPECT_EQ(router.load(1).assigned_weight, 0);
  EXPECT_EQ(router.load(0).assigned_weight, 1);
}

TEST_F(DeviceRouterTest, RecentBackendTimeBreaksTiesAndDecays) {
  DeviceRouter router = MakeRouter();
  auto everywhere = Placed("e", {0, 1, 2});
  router.ObserveGroup(0, {.score_time = absl::Milliseconds(300)});
  router.ObserveGroup(1, {.score_time = absl::Milliseconds(100)});
  EXPECT_GT(router.load(0).recent_busy_seconds, 0.2);
  EXPECT_LE(router.load(0).recent_busy_seconds, 0.3);
  absl::StatusOr<DeviceAssignment> first = router.Assign({everywhere});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->device(), 2);  // never busy
  absl::StatusOr<DeviceAssignment> second = router.Assign({everywhere});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->device(), 1);  // less busy than 0
}

TEST_F(DeviceRouterTest, ConcurrentOpensStayLevel) {
  DeviceRouter router = MakeRouter();
  auto everywhere = Placed("e", {0, 1, 2});
  constexpr int kThreads = 8;
  constexpr int kEach = 30;
  std::vector<std::vector<DeviceAssignment>> held(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) held[t].push_back(*router.Assign({everywhere}));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int d = 0; d < 3; ++d) EXPECT_EQ(router.load(d).assigned_weight, kThreads * kEach / 3) << d;
  held.clear();
  for (int d = 0; d < 3; ++d) EXPECT_EQ(router.load(d).assigned_weight, 0) << d;
}

TEST_F(DeviceRouterTest, TotalStatsSumTheSchedulers) {
  DeviceRouter router = MakeRouter();
  auto features = std::make_shared<const FloatMatrix>(FloatMatrix(5, 4));
  for (int d = 0; d < 3; ++d) {
    absl::Notification done;
    schedulers_[d]->Submit({.model = *backends_[d]->Prepare(model_),
                            .features = features,
                            .done = [&](absl::StatusOr<ScoreResult> r) {
                              EXPECT_TRUE(r.ok());
                              done.Notify();
                            }});
    done.WaitForNotification();
  }
  // A group's counts are added after its callbacks ran.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (router.TotalStats().jobs < 3 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  const BatchSchedulerStats total = router.TotalStats();
  EXPECT_EQ(total.frames, 15);
  EXPECT_EQ(total.jobs, 3);
  EXPECT_EQ(total.max_group_frames, 5);
}

// A backend whose ScoreBatch calls wait until Release().
class HeldBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    if (!entered_.HasBeenNotified()) entered_.Notify();  // one worker: no race
    released_.WaitForNotification();
    return ForwardingBackend::ScoreBatch(jobs, options);
  }
  void WaitEntered() { entered_.WaitForNotification(); }
  void Release() { released_.Notify(); }

 private:
  absl::Notification entered_, released_;
};

TEST_F(DeviceRouterTest, NewWorkGoesPastAnOverloadedDeviceWhileAnotherHasRoom) {
  HeldBackend held_backend(CreateCpuBackend({.num_threads = 1}));
  const BatchSchedulerOptions options{.max_queue_delay = absl::Seconds(100),
                                      .num_workers = 1,
                                      .max_queued_frames = 10,
                                      .overload_wait = absl::Hours(1)};
  BatchScheduler held(&held_backend, options);
  BatchScheduler free(backends_[1].get(), options);
  DeviceRouter router({&held, &free}, {"gpu-a", "gpu-b"});
  auto served = std::make_shared<ServedModel>();
  served->name = "m";
  served->replicas = {*held_backend.Prepare(model_), *backends_[1]->Prepare(model_)};
  served->prepared = served->replicas[0];
  auto only_held = std::make_shared<ServedModel>(*served);
  only_held->replicas[1] = nullptr;

  // Device 0's worker is held and its queue is over half full.
  std::vector<absl::Notification> done(2);
  auto job = [&](int frames, absl::Notification* notification) {
    return ScoreJob{.model = served->replicas[0],
                    .features = std::make_shared<const FloatMatrix>(FloatMatrix(frames, 4)),
                    .done = [notification](absl::StatusOr<ScoreResult>) { notification->Notify(); }};
  };
  held.Submit(job(1, &done[0]));
  held_backend.WaitEntered();
  held.Submit(job(6, &done[1]));
  ASSERT_TRUE(held.Overloaded());

  // Both devices carry no streams, so the tie would go to device 0.
  absl::StatusOr<DeviceAssignment> placed = router.Assign({served});
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->device(), 1);
  // Where device 0 is the only holder it is still chosen; AdmitNew refuses.
  absl::StatusOr<DeviceAssignment> only = router.Assign({only_held});
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_EQ(only->device(), 0);
  EXPECT_EQ(held.AdmitNew().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(held.stats().overload_refusals, 1);  // Overloaded() is not counted

  held_backend.Release();
  for (absl::Notification& n : done) n.WaitForNotification();
  held.Stop();
  free.Stop();
}

TEST(IsDeviceFaultTest, DeviceErrorsCountBadInputAndFullQueuesDoNot) {
  EXPECT_TRUE(IsDeviceFault(absl::InternalError("CUDA error cudaErrorIllegalAddress")));
  EXPECT_TRUE(IsDeviceFault(absl::UnavailableError("CUDA error cudaErrorNoDevice")));
  EXPECT_TRUE(IsDeviceFault(absl::UnknownError("?")));
  EXPECT_TRUE(IsDeviceFault(absl::DataLossError("ECC")));
  EXPECT_FALSE(IsDeviceFault(absl::OkStatus()));
  EXPECT_FALSE(IsDeviceFault(absl::InvalidArgumentError("frame 3 is not finite")));
  EXPECT_FALSE(IsDeviceFault(absl::ResourceExhaustedError("queue full")));
  EXPECT_FALSE(IsDeviceFault(absl::CancelledError("client went away")));
}

TEST_F(DeviceRouterTest, FaultsInARowMakeADeviceFailingAndASuccessHealsIt) {
  DeviceRouter router = MakeRouter();
  int transitions = 0;
  router.SetHealthListener([&] { ++transitions; });
  const absl::Status fault = absl::InternalError("launch: CUDA error cudaErrorLaunchFailure");
  for (int i = 1; i < DeviceRouter::kFailuresToMarkFailing; ++i) router.ObserveBackend(1, fault);
  EXPECT_FALSE(router.failing(1));
  router.ObserveBackend(1, absl::OkStatus());  // the run is broken: counting starts again
  EXPECT_EQ(router.health(1).consecutive_failures, 0);
  for (int i = 1; i < DeviceRouter::kFailuresToMarkFailing; ++i) router.ObserveBackend(1, fault);
  // Bad input in between says nothing about the device.
  router.ObserveBackend(1, absl::InvalidArgumentError("frame 0 is not finite"));
  EXPECT_FALSE(router.failing(1));
  EXPECT_EQ(transitions, 0);
  router.ObserveBackend(1, fault);
  EXPECT_TRUE(router.failing(1));
  EXPECT_EQ(transitions, 1);
  EXPECT_EQ(router.FailingDevices(), std::vector<int>{1});
  const DeviceHealth health = router.health(1);
  EXPECT_EQ(health.last_error, fault.message());
  EXPECT_EQ(health.failed_dispatches, 2 * DeviceRouter::kFailuresToMarkFailing - 1);
  EXPECT_NE(health.failing_since, absl::InfinitePast());
  router.ObserveBackend(1, fault);  // still failing: no second transition
  EXPECT_EQ(transitions, 1);
  EXPECT_FALSE(router.failing(0));
  router.ObserveBackend(1, absl::OkStatus());
  EXPECT_FALSE(router.failing(1));
  EXPECT_EQ(transitions, 2);
  EXPECT_TRUE(router.FailingDevices().empty());
}

TEST_F(DeviceRouterTest, NewStreamsAvoidFailingDevicesAndFailOpenWhenNoneIsHealthy) {
  DeviceRouter router = MakeRouter();
  auto both = Placed("both", {0, 1});
  auto only1 = Placed("only1", {1});
  auto held = router.Assign({both});  // equal loads: device 0
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(held->device(), 0);
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    router.ObserveBackend(1, absl::InternalError("CUDA error cudaErrorECCUncorrectable"));
  }
  // Device 1 is now the less loaded, but failing: the next goes to 0 too.
  auto next = router.Assign({both});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->device(), 0);
  // Only a failing device holds "only1": placed there all the same, to get
  // the device's own error if the fault persists (refusing gains nothing).
  auto open = router.Assign({only1});
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->device(), 1);
  router.ObserveBackend(1, absl::OkStatus());
  auto healed = router.Assign({both});  // 0 holds two, 1 one
  ASSERT_TRUE(healed.ok());
  EXPECT_EQ(healed->device(), 1);
}

TEST_F(DeviceRouterTest, AMoveGoesToTheLeastLoadedHealthyOtherHolderOrNowhere) {
  DeviceRouter router = MakeRouter();
  auto all = Placed("all", {0, 1, 2});
  auto pair = Placed("pair", {0, 1});
  auto only0 = Placed("only0", {0});
  std::vector<absl::StatusOr<DeviceAssignment>> held;
  held.push_back(router.Assign({all}));  // 0
  held.push_back(router.Assign({all}));  // 1
  for (const auto& h : held) ASSERT_TRUE(h.ok());
  // Leaving 0: 2 is the least loaded of the others. Not failing yet itself
  // (one fault is enough to leave: the chunk that failed is scored again).
  auto moved = router.Move({all}, {0});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->device(), 2);
  EXPECT_EQ(router.load(2).assigned_weight, 1);
  EXPECT_EQ(router.moves_from(0), 1);
  // Leaving 0 with a model only 1 also holds: 1, however loaded.
  auto to_pair = router.Move({pair}, {0});
  ASSERT_TRUE(to_pair.ok());
  EXPECT_EQ(to_pair->device(), 1);
  // No other holder, or only failing ones: NOT_FOUND, nothing counted.
  auto nowhere = router.Move({only0}, {0});
  EXPECT_TRUE(absl::IsNotFound(nowhere.status())) << nowhere.status();
  EXPECT_TRUE(absl::StrContains(nowhere.status().message(), "gpu-a")) << nowhere.status();
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    router.ObserveBackend(1, absl::InternalError("CUDA error cudaErrorLaunchFailure"));
  }
  EXPECT_TRUE(absl::IsNotFound(router.Move({pair}, {0}).status()));
  EXPECT_EQ(router.moves_from(0), 2);
  EXPECT_EQ(router.moves_from(1), 0);
  // Models on no common device: CommonDevices' error, as Assign gives.
  auto apart = router.Move({only0, Placed("only2", {2})}, {0});
  EXPECT_TRUE(absl::IsFailedPrecondition(apart.status())) << apart.status();
}

// Work that failed on 0 and then on 1 goes to 2, never back to 0: a device
// not yet marked failing (one fault is not three) is still excluded once
// this work failed there.
TEST_F(DeviceRouterTest, AMoveNeverGoesBackToADeviceTheWorkFailedOn) {
  DeviceRouter router = MakeRouter();
  auto all = Placed("all", {0, 1, 2});
  std::vector<absl::StatusOr<DeviceAssignment>> held;
  for (int i = 0; i < 4; ++i) held.push_back(router.Assign({all}));  // weights 2, 1, 1
  auto first = router.Move({all}, {0});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->device(), 1);  // 1 and 2 tie: the lower index
  router.ObserveBackend(0, absl::InternalError("CUDA error cudaErrorLaunchFailure"));
  router.ObserveBackend(1, absl::InternalError("CUDA error cudaErrorLaunchFailure"));
  auto second = router.Move({all}, {0, 1});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->device(), 2);  // device 0 is less loaded now, but tried
  EXPECT_TRUE(absl::IsNotFound(router.Move({all}, {0, 1, 2}).status()));
  EXPECT_EQ(router.moves_from(0), 1);
  EXPECT_EQ(router.moves_from(1), 1);
  EXPECT_FALSE(router.failing(0));
}

TEST_F(DeviceRouterTest, ProberProbesOnlyFailingDevicesUntilTheyHeal) {
  DeviceRouter router = MakeRouter();
  for (int i = 0; i < DeviceRouter::kFailuresToMarkFailing; ++i) {
    router.ObserveBackend(2, absl::InternalError("lost"));
  }
  absl::Mutex mu;
  std::vector<int> probed;
  bool recovered = false;
  DeviceProber prober(
      &router,
      [&](int device) {
        absl::MutexLock lock(&mu);
        probed.push_back(device);
        return recovered ? absl::OkStatus() : absl::InternalError("still lost");
      },
      absl::Milliseconds(5));
  auto probed_at_least = [&](size_t n) {
    absl::MutexLock lock(&mu);
    return probed.size() >= n;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!probed_at_least(3) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
  EXPECT_TRUE(router.failing(2));
  EXPECT_EQ(router.health(2).last_error, "still lost");
  {
    absl::MutexLock lock(&mu);
    recovered = true;
  }
  while (router.failing(2) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
  EXPECT_FALSE(router.failing(2));
  prober.Stop();
  const int64_t probes = prober.probes();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(static_cast<int64_t>(probed.size()), probes);
  for (int device : probed) EXPECT_EQ(device, 2);
}

}  // namespace
}  // namespace gmmscore
