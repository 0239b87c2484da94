#include "server/batch_scheduler.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/core/status_macros.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

using ::testing::ElementsAre;

class FakePrepared : public PreparedModel {
 public:
  explicit FakePrepared(std::shared_ptr<const DiagGmmModel> model)
      : PreparedModel(std::move(model)) {}
  int64_t device_bytes() const override { return 0; }
};

// Scores frame x with state s as (s + 1) * sum(x): every row's result depends
// on that row alone, so a wrong split shows. Records the frames of every call;
// calls block while the gate is closed.
class FakeBackend : public ScoringBackend {
 public:
  std::string name() const override { return "fake"; }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    return std::make_shared<FakePrepared>(std::move(model));
  }
  absl::Status Score(const PreparedModel& model, ConstMatrixView features, const ScoreOptions&,
                     ScoreResult* result) override {
    {
      absl::MutexLock lock(&mu_);
      calls_.push_back(features.rows);
      mu_.Await(absl::Condition(+[](bool* open) { return *open; }, &gate_open_));
    }
    GMM_RETURN_IF_ERROR(ValidateFeatures(model.model(), features));
    const int states = model.model().num_states();
    result->loglikes.Resize(features.rows, states);
    result->frame_totals.assign(features.rows, 0.0f);
    for (int64_t t = 0; t < features.rows; ++t) {
      float sum = 0.0f;
      for (int64_t d = 0; d < features.cols; ++d) sum += features.at(t, d);
      for (int s = 0; s < states; ++s) result->loglikes.at(t, s) = (s + 1) * sum;
      result->frame_totals[t] = sum;
    }
    return absl::OkStatus();
  }
  void SetGate(bool open) {
    absl::MutexLock lock(&mu_);
    gate_open_ = open;
  }
  std::vector<int64_t> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  void WaitForCalls(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&] { return calls_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
  }

 private:
  absl::Mutex mu_;
  bool gate_open_ = true;
  std::vector<int64_t> calls_;
};

// Collects one job's completion.
struct Outcome {
  absl::Notification done;
  absl::StatusOr<ScoreResult> result = absl::UnknownError("not done");
};

class BatchSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint64_t seed : {1, 2}) {
      auto model = GenerateSyntheticModel(
          {.num_states = 3, .min_gaussians = 1, .max_gaussians = 2, .dim = 4, .seed = seed});
      ASSERT_TRUE(model.ok());
      auto prepared =
          backend_.Prepare(std::make_shared<const DiagGmmModel>(std::move(model).value()));
      ASSERT_TRUE(prepared.ok());
      models_.push_back(*prepared);
    }
  }

  // A job of `frames` frames whose values are all `value`.
  ScoreJob MakeJob(int model, int64_t frames, float value, Outcome* outcome) {
    auto features = std::make_shared<FloatMatrix>(frames, 4, value);
    return ScoreJob{.model = models_[model],
                    .features = features,
                    .done = [outcome](absl::StatusOr<ScoreResult> r) {
                      outcome->result = std::move(r);
                      outcome->done.Notify();
                    }};
  }

  static void ExpectScores(Outcome& outcome, int64_t frames, float value) {
    outcome.done.WaitForNotification();
    ASSERT_TRUE(outcome.result.ok()) << outcome.result.status();
    ASSERT_EQ(outcome.result->loglikes.rows(), frames);
    for (int64_t t = 0; t < frames; ++t) {
      for (int s = 0; s < 3; ++s) ASSERT_FLOAT_EQ(outcome.result->loglikes.at(t, s), (s + 1) * 4 * value);
      ASSERT_FLOAT_EQ(outcome.result->frame_totals[t], 4 * value);
    }
  }

  FakeBackend backend_;
  std::vector<std::shared_ptr<const PreparedModel>> models_;
};

TEST_F(BatchSchedulerTest, IdleBackendDispatchesAtOnce) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100)});
  Outcome outcome;
  const absl::Time start = absl::Now();
  scheduler.Submit(MakeJob(0, 5, 1.0f, &outcome));
  ExpectScores(outcome, 5, 1.0f);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, GathersWhileBusyAndGroupsByModel) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 1000,
                                       .max_queue_delay = absl::Seconds(100),
                                       .num_workers = 2});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.5f, &first));
  backend_.WaitForCalls(1);
  std::vector<Outcome> outcomes(20);
  for (int i = 0; i < 20; ++i) scheduler.Submit(MakeJob(i % 2, 1 + i % 3, i, &outcomes[i]));
  backend_.SetGate(true);
  ExpectScores(first, 1, 0.5f);
  for (int i = 0; i < 20; ++i) ExpectScores(outcomes[i], 1 + i % 3, i);
  // One call for the first job, then one ScoreBatch call for the 20
  // gathered, which the backend scores as one run per model.
  std::vector<int64_t> calls = backend_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], 1);
  EXPECT_EQ(calls[1] + calls[2], 39);
  // A group's counters are added after its callbacks ran: stop first.
  scheduler.Stop();  // all callbacks ran: the outcomes may go
  const BatchSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.max_group_jobs, 20);
  EXPECT_EQ(stats.jobs, 21);
  EXPECT_EQ(stats.group_calls, 2);
}

TEST_F(BatchSchedulerTest, FullBatchDispatchesWithoutWaitingForTheDelay) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 20,
                                       .max_queue_delay = absl::Seconds(100),
                                       .num_workers = 2});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  std::vector<Outcome> outcomes(5);
  for (int i = 0; i < 5; ++i) scheduler.Submit(MakeJob(1, 4, 1.0f, &outcomes[i]));
  // 20 frames are queued: the second worker dispatches them while the first
  // call still blocks.
  backend_.WaitForCalls(2);
  EXPECT_THAT(backend_.calls(), ElementsAre(1, 20));
  backend_.SetGate(true);
  for (Outcome& o : outcomes) ExpectScores(o, 4, 1.0f);
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, QueueDelayBoundsTheWaitWhileBusy) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 1000,
                                       .max_queue_delay = absl::Milliseconds(20),
                                       .num_workers = 2});
  backend_.SetGate(false);
  Outcome first, second;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  scheduler.Submit(MakeJob(0, 2, 1.0f, &second));
  backend_.WaitForCalls(2);  // would hang if the delay were not honoured
  EXPECT_THAT(backend_.calls(), ElementsAre(1, 2));
  backend_.SetGate(true);
  ExpectScores(second, 2, 1.0f);
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, BatchesNeverExceedMaxFramesUnlessOneJobDoes) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 10,
                                       .max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  std::vector<Outcome> outcomes(4);
  scheduler.Submit(MakeJob(0, 30, 1.0f, &outcomes[0]));  // alone, over the limit
  scheduler.Submit(MakeJob(0, 6, 1.0f, &outcomes[1]));
  scheduler.Submit(MakeJob(0, 4, 1.0f, &outcomes[2]));
  scheduler.Submit(MakeJob(0, 5, 1.0f, &outcomes[3]));
  backend_.SetGate(true);
  ExpectScores(outcomes[0], 30, 1.0f);
  ExpectScores(outcomes[3], 5, 1.0f);
  EXPECT_THAT(backend_.calls(), ElementsAre(1, 30, 10, 5));
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, BadJobFailsAloneAndItsNeighboursAreScored) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100)});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  Outcome good_a, bad, good_b;
  scheduler.Submit(MakeJob(0, 3, 1.0f, &good_a));
  scheduler.Submit(MakeJob(0, 2, NAN, &bad));
  scheduler.Submit(MakeJob(0, 3, 2.0f, &good_b));
  backend_.SetGate(true);
  ExpectScores(good_a, 3, 1.0f);
  ExpectScores(good_b, 3, 2.0f);
  bad.done.WaitForNotification();
  EXPECT_EQ(bad.result.status().code(), absl::StatusCode::kInvalidArgument);
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

// on_backend_outcome says, once per dispatch, whether the backend scored
// anything: OK when a retried neighbour succeeded, the error when every call
// failed (what DeviceRouter judges a device's health by).
TEST_F(BatchSchedulerTest, ReportsEachDispatchsBackendOutcome) {
  absl::Mutex mu;
  std::vector<absl::Status> outcomes;
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .on_backend_outcome = [&](const absl::Status& status) {
                                         absl::MutexLock lock(&mu);
                                         outcomes.push_back(status);
                                       }});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  Outcome good, bad_in_group;
  scheduler.Submit(MakeJob(0, 3, 1.0f, &good));
  scheduler.Submit(MakeJob(0, 2, NAN, &bad_in_group));
  backend_.SetGate(true);
  ExpectScores(good, 3, 1.0f);
  Outcome bad_alone;
  scheduler.Submit(MakeJob(0, 2, NAN, &bad_alone));
  bad_alone.done.WaitForNotification();
  scheduler.Stop();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0];  // the first job
  EXPECT_TRUE(outcomes[1].ok()) << outcomes[1];  // the bad job failed, its neighbour not
  EXPECT_EQ(outcomes[2].code(), absl::StatusCode::kInvalidArgument) << outcomes[2];
}

// A fused chunk (ScoreJob::fusion) is one job over both models: scored in
// the same call as plain jobs, fused there (the base ScoreFusedBatch), its
// frames counted once per model; retried alone from its own state when a
// neighbour fails the group.
TEST_F(BatchSchedulerTest, FusedChunksAreFusedInTheCallAndRetriedAlone) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100)});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  struct FusedOutcome {
    absl::Notification done;
    absl::StatusOr<FusedChunkResult> result = absl::UnknownError("not done");
  };
  auto fusion = ModelFusion::Create(2, {.method = FusionMethod::kLogSumExp, .weights = {1, 3}});
  ASSERT_TRUE(fusion.ok());
  auto make_fused = [&](int64_t frames, float value, bool model_scores, FusedOutcome* outcome) {
    ScoreJob job = MakeJob(0, frames, value, nullptr);
    job.done = nullptr;
    job.fusion = std::make_shared<const FusedChunk>(FusedChunk{.models = {models_[0], models_[1]},
                                                               .precisions = {Precision::kExact, Precision::kExact},
                                                               .state = *fusion,
                                                               .model_scores = model_scores,
                                                               .frame_totals = true});
    job.fused_done = [outcome](absl::StatusOr<FusedChunkResult> r) {
      outcome->result = std::move(r);
      outcome->done.Notify();
    };
    return job;
  };
  FusedOutcome fused_only, bad, full;
  Outcome plain;
  scheduler.Submit(make_fused(3, 1.0f, false, &fused_only));
  scheduler.Submit(MakeJob(1, 2, 2.0f, &plain));
  scheduler.Submit(make_fused(2, NAN, true, &bad));
  scheduler.Submit(make_fused(4, 3.0f, true, &full));
  backend_.SetGate(true);
  ExpectScores(plain, 2, 2.0f);
  bad.done.WaitForNotification();
  EXPECT_EQ(bad.result.status().code(), absl::StatusCode::kInvalidArgument);
  for (auto [outcome, frames, value] : {std::tuple{&fused_only, 3, 1.0f}, std::tuple{&full, 4, 3.0f}}) {
    outcome->done.WaitForNotification();
    ASSERT_TRUE(outcome->result.ok()) << outcome->result.status();
    const FusedChunkResult& result = *outcome->result;
    // Both fake models score (s + 1) * sum(x): their weighted log-sum-exp
    // is that score again, whatever the weights.
    ASSERT_EQ(result.fused.loglikes.rows(), frames);
    for (int64_t t = 0; t < frames; ++t) {
      for (int s = 0; s < 3; ++s) EXPECT_NEAR(result.fused.loglikes.at(t, s), (s + 1) * 4 * value, 1e-4);
    }
    EXPECT_EQ(result.fused.frame_totals.size(), static_cast<size_t>(frames));
    ASSERT_EQ(result.fused.model_weights.size(), static_cast<size_t>(2 * frames));
    EXPECT_NEAR(result.fused.model_weights[1], 0.75f, 1e-6);
    EXPECT_TRUE(result.state.has_value());
    ASSERT_EQ(result.models.size(), 2u);
    for (const ScoreResult& model : result.models) {
      EXPECT_EQ(model.loglikes.rows(), outcome == &full ? frames : 0);
    }
  }
  scheduler.Stop();
  // 1 + 2 plain frames, 2 x (3 + 4) fused ones (the bad chunk failed).
  EXPECT_EQ(scheduler.stats().frames, 1 + 2 + 2 * (3 + 4) + 2 * 2);
}

TEST_F(BatchSchedulerTest, CancelledJobsAreNotScored) {
  BatchScheduler scheduler(&backend_, {.num_workers = 1});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome outcome;
  ScoreJob job = MakeJob(0, 7, 1.0f, &outcome);
  job.cancelled = cancelled;
  scheduler.Submit(std::move(job));
  cancelled->store(true);
  backend_.SetGate(true);
  outcome.done.WaitForNotification();
  EXPECT_EQ(outcome.result.status().code(), absl::StatusCode::kCancelled);
  first.done.WaitForNotification();
  EXPECT_THAT(backend_.calls(), ElementsAre(1));
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, TransformIsAppliedWhilePacking) {
  BatchScheduler scheduler(&backend_, {});
  // y = 2 x + 1 in every dimension.
  std::vector<float> values(4 * 5, 0.0f);
  for (int i = 0; i < 4; ++i) {
    values[i * 5 + i] = 2.0f;
    values[i * 5 + 4] = 1.0f;
  }
  auto transform = FeatureTransform::Create(4, 5, values);
  ASSERT_TRUE(transform.ok());
  Outcome outcome;
  ScoreJob job = MakeJob(1, 3, 1.5f, &outcome);
  job.transform = std::make_shared<const FeatureTransform>(*std::move(transform));
  scheduler.Submit(std::move(job));
  ExpectScores(outcome, 3, 4.0f);
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

TEST_F(BatchSchedulerTest, StopScoresWhatIsQueuedThenRefuses) {
  auto scheduler = std::make_unique<BatchScheduler>(
      &backend_, BatchSchedulerOptions{.max_queue_delay = absl::Seconds(100)});
  backend_.SetGate(false);
  std::vector<Outcome> outcomes(5);
  for (int i = 0; i < 5; ++i) scheduler->Submit(MakeJob(0, 2, i, &outcomes[i]));
  backend_.SetGate(true);
  scheduler->Stop();
  for (int i = 0; i < 5; ++i) ExpectScores(outcomes[i], 2, i);
  Outcome late;
  scheduler->Submit(MakeJob(0, 2, 1.0f, &late));
  ASSERT_TRUE(late.done.HasBeenNotified());
  EXPECT_EQ(late.result.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(BatchSchedulerTest, FullQueueRefusesNewWorkWithResourceExhausted) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 100,
                                       .max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);  // running: the queue is empty again
  std::vector<Outcome> queued(2);
  scheduler.Submit(MakeJob(0, 6, 1.0f, &queued[0]));
  scheduler.Submit(MakeJob(1, 4, 2.0f, &queued[1]));  // 10 frames: full
  Outcome refused;
  scheduler.Submit(MakeJob(0, 1, 3.0f, &refused));
  ASSERT_TRUE(refused.done.HasBeenNotified());  // at once, not after the queue drains
  EXPECT_EQ(refused.result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.result.status().message().find("queue is full"), std::string::npos)
      << refused.result.status();
  // A chunk's jobs go in together or not at all.
  std::vector<Outcome> pair(2);
  std::vector<ScoreJob> jobs;
  jobs.push_back(MakeJob(0, 1, 4.0f, &pair[0]));
  jobs.push_back(MakeJob(1, 1, 4.0f, &pair[1]));
  scheduler.SubmitAll(std::move(jobs));
  for (Outcome& o : pair) {
    ASSERT_TRUE(o.done.HasBeenNotified());
    EXPECT_EQ(o.result.status().code(), absl::StatusCode::kResourceExhausted);
  }
  BatchSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.rejected_jobs, 3);
  EXPECT_EQ(stats.queued_frames, 10);
  backend_.SetGate(true);
  ExpectScores(queued[0], 6, 1.0f);
  ExpectScores(queued[1], 4, 2.0f);
  // Room again once the queue drained.
  Outcome later;
  scheduler.Submit(MakeJob(0, 9, 5.0f, &later));
  ExpectScores(later, 9, 5.0f);
  scheduler.Stop();  // all callbacks ran: the outcomes may go
}

// With full_queue_wait, work that finds the queue full waits for room
// instead of being refused, and joins the queue in arrival order: work that
// would fit waits behind work that does not yet.
TEST_F(BatchSchedulerTest, WorkFindingTheQueueFullWaitsAndJoinsInArrivalOrder) {
  BatchScheduler scheduler(&backend_, {.max_batch_frames = 8,
                                       .max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10,
                                       .full_queue_wait = absl::Seconds(100)});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);  // running: the queue is empty again
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome dead, queued, big, small;
  ScoreJob doomed = MakeJob(0, 6, 1.0f, &dead);
  doomed.cancelled = cancelled;
  scheduler.Submit(std::move(doomed));
  scheduler.Submit(MakeJob(0, 4, 2.0f, &queued));  // 10 frames: full
  scheduler.Submit(MakeJob(0, 8, 3.0f, &big));
  EXPECT_FALSE(big.done.HasBeenNotified());  // waits, not refused
  const absl::Status admit = scheduler.AdmitNew();
  EXPECT_EQ(admit.code(), absl::StatusCode::kResourceExhausted) << admit;
  EXPECT_NE(admit.message().find("wait for room in its full queue"), std::string::npos) << admit;

  // The cancelled job's room (6 frames) is not enough for the 8 waiting...
  cancelled->store(true);
  scheduler.PurgeDead();
  dead.done.WaitForNotification();
  EXPECT_EQ(dead.result.status().code(), absl::StatusCode::kCancelled);
  // ...and 1 frame that would fit now waits behind them.
  scheduler.Submit(MakeJob(0, 1, 4.0f, &small));
  BatchSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.queued_frames, 4);
  EXPECT_EQ(stats.waiting_jobs, 2);
  EXPECT_EQ(stats.waiting_frames, 9);
  EXPECT_EQ(stats.waited_jobs, 2);
  EXPECT_EQ(stats.rejected_jobs, 0);

  backend_.SetGate(true);
  ExpectScores(queued, 4, 2.0f);
  ExpectScores(big, 8, 3.0f);
  ExpectScores(small, 1, 4.0f);
  // One worker, batches of at most 8 frames: in the order they arrived.
  EXPECT_THAT(backend_.calls(), ElementsAre(1, 4, 8, 1));
  EXPECT_TRUE(scheduler.AdmitNew().ok());
  scheduler.Stop();
  stats = scheduler.stats();
  EXPECT_EQ(stats.waiting_jobs, 0);
  EXPECT_EQ(stats.jobs, 5);
}

// Waiting is bounded: what has waited full_queue_wait is refused, and a
// cancelled stream's waiting work is dropped at once.
TEST_F(BatchSchedulerTest, WorkWaitingPastTheBoundIsRefusedAndDeadWorkIsDropped) {
  const absl::Duration bound = absl::Milliseconds(60);
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10,
                                       .full_queue_wait = bound});
  backend_.SetGate(false);
  Outcome first, queued;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  scheduler.Submit(MakeJob(0, 10, 1.0f, &queued));  // full
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome dropped;
  ScoreJob doomed = MakeJob(0, 2, 2.0f, &dropped);
  doomed.cancelled = cancelled;
  const absl::Time submitted = absl::Now();
  scheduler.Submit(std::move(doomed));
  std::vector<Outcome> pair(2);
  std::vector<ScoreJob> jobs;
  jobs.push_back(MakeJob(0, 1, 3.0f, &pair[0]));
  jobs.push_back(MakeJob(1, 1, 3.0f, &pair[1]));
  scheduler.SubmitAll(std::move(jobs));
  cancelled->store(true);
  scheduler.PurgeDead();
  dropped.done.WaitForNotification();
  EXPECT_EQ(dropped.result.status().code(), absl::StatusCode::kCancelled);
  for (Outcome& o : pair) {
    o.done.WaitForNotification();
    EXPECT_GE(absl::Now() - submitted, bound);
    EXPECT_EQ(o.result.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(o.result.status().message().find("stayed full"), std::string::npos)
        << o.result.status();
    EXPECT_NE(o.result.status().message().find("--queue_full_wait_ms 60"), std::string::npos)
        << o.result.status();
  }
  BatchSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.waited_jobs, 3);
  EXPECT_EQ(stats.rejected_jobs, 2);
  EXPECT_EQ(stats.cancelled_jobs, 1);
  EXPECT_EQ(stats.waiting_jobs, 0);
  EXPECT_FALSE(queued.done.HasBeenNotified());  // what was queued is not touched
  backend_.SetGate(true);
  ExpectScores(queued, 10, 1.0f);
  scheduler.Stop();
}

// Polls `done` for up to 30 s (the machine may be loaded).
bool Eventually(const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// Room freed by a purge, or by the expiry of the work ahead, goes to the
// waiting work at once, not at the next dispatch.
TEST_F(BatchSchedulerTest, WaitingWorkTakesRoomFreedByAPurgeOrAnExpiryAtOnce) {
  Outcome first, dead, kept, purged_in, too_big, behind;  // outlive the scheduler
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10,
                                       .full_queue_wait = absl::Milliseconds(400)});
  backend_.SetGate(false);
  absl::Cleanup open_gate = [&] { backend_.SetGate(true); };  // a failed check must not hang Stop
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  ScoreJob doomed = MakeJob(0, 5, 1.0f, &dead);
  doomed.cancelled = cancelled;
  scheduler.Submit(std::move(doomed));
  scheduler.Submit(MakeJob(0, 4, 2.0f, &kept));       // 9 of 10
  scheduler.Submit(MakeJob(0, 5, 3.0f, &purged_in));  // waits
  cancelled->store(true);
  scheduler.PurgeDead();
  dead.done.WaitForNotification();
  // The purge made room for it: queued with no dispatch in between.
  EXPECT_TRUE(Eventually([&] { return scheduler.stats().waiting_jobs == 0; }));
  EXPECT_EQ(scheduler.stats().queued_frames, 9);

  scheduler.Submit(MakeJob(0, 2, 4.0f, &too_big));  // 11 > 10: waits
  absl::SleepFor(absl::Milliseconds(300));
  scheduler.Submit(MakeJob(0, 1, 5.0f, &behind));  // would fit, waits behind it
  EXPECT_EQ(scheduler.stats().waiting_jobs, 2);
  ASSERT_TRUE(too_big.done.WaitForNotificationWithTimeout(absl::Seconds(30)));  // its 400 ms are up
  EXPECT_EQ(too_big.result.status().code(), absl::StatusCode::kResourceExhausted);
  // ...and the one behind it moved in then, with 300 ms of its own left.
  EXPECT_TRUE(Eventually([&] { return scheduler.stats().waiting_jobs == 0; }));
  EXPECT_FALSE(behind.done.HasBeenNotified());
  EXPECT_EQ(scheduler.stats().queued_frames, 10);
  backend_.SetGate(true);
  ExpectScores(kept, 4, 2.0f);
  ExpectScores(purged_in, 5, 3.0f);
  ExpectScores(behind, 1, 5.0f);
  scheduler.Stop();
  const BatchSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.rejected_jobs, 1);
  EXPECT_EQ(stats.cancelled_jobs, 1);
  EXPECT_EQ(stats.waited_jobs, 3);
}

TEST_F(BatchSchedulerTest, StopScoresWorkStillWaiting) {
  auto scheduler = std::make_unique<BatchScheduler>(
      &backend_, BatchSchedulerOptions{.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 4,
                                       .full_queue_wait = absl::Seconds(100)});
  backend_.SetGate(false);
  std::vector<Outcome> outcomes(4);
  scheduler->Submit(MakeJob(0, 1, 0.0f, &outcomes[0]));
  backend_.WaitForCalls(1);
  for (int i = 1; i < 4; ++i) scheduler->Submit(MakeJob(0, 3, i, &outcomes[i]));
  EXPECT_EQ(scheduler->stats().waiting_jobs, 2);
  absl::Cleanup open_gate = [&] { backend_.SetGate(true); };
  // Stop takes the waiting work into the queue, over its bound, while the
  // backend is still held.
  std::thread stopper([&] { scheduler->Stop(); });
  EXPECT_TRUE(Eventually([&] { return scheduler->stats().waiting_jobs == 0; }));
  EXPECT_EQ(scheduler->stats().queued_frames, 9);
  backend_.SetGate(true);
  stopper.join();
  for (int i = 1; i < 4; ++i) {
    ASSERT_TRUE(outcomes[i].done.WaitForNotificationWithTimeout(absl::Seconds(30))) << i;
    ExpectScores(outcomes[i], 3, i);
  }
}

TEST_F(BatchSchedulerTest, AJobLargerThanTheQueueBoundIsAdmittedIntoAnEmptyQueue) {
  BatchScheduler scheduler(&backend_, {.max_queued_frames = 4});
  Outcome big;
  scheduler.Submit(MakeJob(0, 9, 1.0f, &big));
  ExpectScores(big, 9, 1.0f);
  scheduler.Stop();
}

TEST_F(BatchSchedulerTest, CancelledJobsGiveTheirRoomToNewWork) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome dead;
  ScoreJob job = MakeJob(0, 10, 1.0f, &dead);
  job.cancelled = cancelled;
  scheduler.Submit(std::move(job));
  cancelled->store(true);
  Outcome fresh;
  scheduler.Submit(MakeJob(1, 5, 2.0f, &fresh));
  ASSERT_TRUE(dead.done.HasBeenNotified());
  EXPECT_EQ(dead.result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(fresh.done.HasBeenNotified());
  backend_.SetGate(true);
  ExpectScores(fresh, 5, 2.0f);
  scheduler.Stop();
  EXPECT_EQ(scheduler.stats().cancelled_jobs, 1);
}

TEST_F(BatchSchedulerTest, PurgeDeadFreesCancelledJobsAtOnce) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100), .num_workers = 1});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome a, b, alive;
  for (Outcome* o : {&a, &b}) {
    ScoreJob job = MakeJob(0, 7, 1.0f, o);
    job.cancelled = cancelled;
    scheduler.Submit(std::move(job));
  }
  scheduler.Submit(MakeJob(1, 2, 1.0f, &alive));
  EXPECT_EQ(scheduler.stats().queued_frames, 16);
  cancelled->store(true);
  scheduler.PurgeDead();  // the backend is still blocked
  ASSERT_TRUE(a.done.HasBeenNotified());
  ASSERT_TRUE(b.done.HasBeenNotified());
  EXPECT_EQ(a.result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(alive.done.HasBeenNotified());
  EXPECT_EQ(scheduler.stats().queued_frames, 2);
  EXPECT_EQ(scheduler.stats().queued_jobs, 1);
  backend_.SetGate(true);
  ExpectScores(alive, 2, 1.0f);
  scheduler.Stop();
}

// Walks of the queue for dead jobs are rate-limited: an overloaded server
// once walked its whole queue for every refused chunk and every cancelled
// stream, under the lock its workers need.
TEST_F(BatchSchedulerTest, TheQueueIsWalkedForDeadJobsAtMostOncePerInterval) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10,
                                       .min_purge_interval = absl::Hours(1)});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome queued;
  ScoreJob job = MakeJob(0, 10, 1.0f, &queued);
  job.cancelled = cancelled;
  scheduler.Submit(std::move(job));  // the queue is full
  std::vector<Outcome> refused(100);
  for (Outcome& o : refused) scheduler.Submit(MakeJob(1, 1, 2.0f, &o));
  for (Outcome& o : refused) {
    ASSERT_TRUE(o.done.HasBeenNotified());
    EXPECT_EQ(o.result.status().code(), absl::StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(scheduler.stats().purge_walks, 1);  // the first refusal's, not one each

  // Within the interval a cancellation's purge waits for it: the dead job
  // still holds its room, and nothing else walks the queue.
  cancelled->store(true);
  for (int i = 0; i < 10; ++i) scheduler.PurgeDead();
  Outcome still_refused;
  scheduler.Submit(MakeJob(1, 1, 2.0f, &still_refused));
  ASSERT_TRUE(still_refused.done.HasBeenNotified());
  EXPECT_EQ(still_refused.result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(queued.done.HasBeenNotified());
  EXPECT_EQ(scheduler.stats().purge_walks, 1);
  // A worker still never scores it.
  backend_.SetGate(true);
  queued.done.WaitForNotification();
  EXPECT_EQ(queued.result.status().code(), absl::StatusCode::kCancelled);
  scheduler.Stop();
  EXPECT_EQ(backend_.calls().size(), 1u);
}

TEST_F(BatchSchedulerTest, APurgeAskedForTooSoonIsDoneWhenItsIntervalEndsEvenWithEveryWorkerHeld) {
  const absl::Duration interval = absl::Milliseconds(300);
  // The only worker is held in the backend: the deferred walk must not need it.
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .min_purge_interval = interval});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  Outcome dead, alive;
  ScoreJob job = MakeJob(0, 5, 1.0f, &dead);
  job.cancelled = cancelled;
  scheduler.Submit(std::move(job));
  scheduler.Submit(MakeJob(1, 2, 1.0f, &alive));
  const absl::Time walked = absl::Now();
  scheduler.PurgeDead();  // walks: nothing dead yet
  cancelled->store(true);
  scheduler.PurgeDead();  // too soon: deferred
  if (absl::Now() - walked < interval) EXPECT_FALSE(dead.done.HasBeenNotified());
  // The backend stays held: only the deferred walk can complete it.
  dead.done.WaitForNotification();
  EXPECT_EQ(dead.result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(scheduler.stats().purge_walks, 2);
  EXPECT_EQ(scheduler.stats().queued_frames, 2);
  EXPECT_FALSE(alive.done.HasBeenNotified());
  backend_.SetGate(true);
  ExpectScores(alive, 2, 1.0f);
  scheduler.Stop();
}

TEST_F(BatchSchedulerTest, AdmitNewRefusesWhileTheOldestQueuedJobHasWaitedTooLong) {
  const absl::Duration limit = absl::Milliseconds(100);
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .overload_wait = limit});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  EXPECT_TRUE(scheduler.AdmitNew().ok());  // running, nothing queued
  Outcome queued;
  const absl::Time submitted = absl::Now();
  scheduler.Submit(MakeJob(0, 3, 1.0f, &queued));
  const absl::Status young = scheduler.AdmitNew();
  if (absl::Now() - submitted < limit) EXPECT_TRUE(young.ok()) << young;
  absl::SleepFor(limit + absl::Milliseconds(20));
  const absl::Status old = scheduler.AdmitNew();
  EXPECT_EQ(old.code(), absl::StatusCode::kResourceExhausted) << old;
  EXPECT_NE(old.message().find("--overload_queue_ms"), std::string::npos) << old;
  EXPECT_GE(scheduler.stats().overload_refusals, 1);
  backend_.SetGate(true);
  ExpectScores(queued, 3, 1.0f);
  EXPECT_TRUE(scheduler.AdmitNew().ok());  // caught up
  scheduler.Stop();
}

TEST_F(BatchSchedulerTest, AdmitNewRefusesWhileTheQueueIsOverHalfFull) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100),
                                       .num_workers = 1,
                                       .max_queued_frames = 10,
                                       .overload_wait = absl::Hours(1)});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  std::vector<Outcome> queued(3);
  scheduler.Submit(MakeJob(0, 5, 1.0f, &queued[0]));
  EXPECT_TRUE(scheduler.AdmitNew().ok());  // half: still admits
  scheduler.Submit(MakeJob(0, 1, 1.0f, &queued[1]));
  const absl::Status full = scheduler.AdmitNew();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("over half of --max_queued_frames 10"), std::string::npos) << full;
  // It says how old the queue and the running call are: a stalled backend
  // (here: the gated call, 30 ms and more) or a burst.
  EXPECT_THAT(std::string(full.message()),
              testing::ContainsRegex("oldest chunk queued [0-9]+ ms ago; 1 backend call running, "
                                     "the oldest for [0-9]+ ms"));
  absl::SleepFor(absl::Milliseconds(30));
  const absl::Status later = scheduler.AdmitNew();
  const std::string said(later.message());
  const size_t at = said.find("the oldest for ");
  EXPECT_NE(at, std::string::npos) << later;  // not ASSERT: the gate must open below
  if (at != std::string::npos) EXPECT_GE(std::atoi(said.c_str() + at + 15), 30) << later;
  // Work of those admitted still queues up to the bound.
  scheduler.Submit(MakeJob(0, 4, 1.0f, &queued[2]));
  EXPECT_FALSE(queued[2].done.HasBeenNotified());
  EXPECT_EQ(scheduler.stats().overload_refusals, 2);
  backend_.SetGate(true);
  ExpectScores(queued[2], 4, 1.0f);
  EXPECT_TRUE(scheduler.AdmitNew().ok());
  scheduler.Stop();
}

TEST_F(BatchSchedulerTest, AdmitNewNeverRefusesWithoutAnOverloadWait) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100), .num_workers = 1});
  backend_.SetGate(false);
  Outcome first, queued;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  scheduler.Submit(MakeJob(0, 3, 1.0f, &queued));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(scheduler.AdmitNew().ok());
  EXPECT_EQ(scheduler.stats().overload_refusals, 0);
  backend_.SetGate(true);
  ExpectScores(queued, 3, 1.0f);
  scheduler.Stop();
}

TEST_F(BatchSchedulerTest, JobsPastTheirDeadlineAreDroppedUnscored) {
  BatchScheduler scheduler(&backend_, {.max_queue_delay = absl::Seconds(100), .num_workers = 1});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  Outcome expired, purged, kept;
  ScoreJob job = MakeJob(0, 3, 1.0f, &expired);
  job.deadline = absl::Now() + absl::Milliseconds(50);
  scheduler.Submit(std::move(job));
  ScoreJob past = MakeJob(0, 2, 1.0f, &purged);
  past.deadline = absl::Now() - absl::Seconds(1);
  scheduler.Submit(std::move(past));
  ScoreJob later = MakeJob(0, 4, 1.0f, &kept);
  later.deadline = absl::Now() + absl::Seconds(600);
  scheduler.Submit(std::move(later));
  scheduler.PurgeDead();
  ASSERT_TRUE(purged.done.HasBeenNotified());
  EXPECT_EQ(purged.result.status().code(), absl::StatusCode::kDeadlineExceeded);
  absl::SleepFor(absl::Milliseconds(100));  // the first deadline passes in the queue
  backend_.SetGate(true);
  expired.done.WaitForNotification();
  EXPECT_EQ(expired.result.status().code(), absl::StatusCode::kDeadlineExceeded);
  ExpectScores(kept, 4, 1.0f);
  scheduler.Stop();
  // Only the first job and the live one reached the backend.
  int64_t frames = 0;
  for (int64_t rows : backend_.calls()) frames += rows;
  EXPECT_EQ(frames, 1 + 4);
  EXPECT_EQ(scheduler.stats().expired_jobs, 2);
}

TEST_F(BatchSchedulerTest, ReportsEveryBackendCallAndHonoursAModelsOwnCap) {
  absl::Mutex mu;
  std::vector<GroupReport> reports;
  BatchScheduler scheduler(&backend_,
                           {.max_batch_frames = 100,
                            .max_queue_delay = absl::Seconds(100),
                            .num_workers = 1,
                            .on_group = [&](const GroupReport& report) {
                              absl::MutexLock lock(&mu);
                              reports.push_back(report);
                            }});
  backend_.SetGate(false);
  Outcome first;
  scheduler.Submit(MakeJob(0, 1, 0.0f, &first));
  backend_.WaitForCalls(1);
  int stream_a = 0, stream_b = 0;
  std::vector<Outcome> outcomes(5);
  for (int i = 0; i < 3; ++i) {  // model 0: 2 streams, 3 chunks of 2 frames
    ScoreJob job = MakeJob(0, 2, 1.0f, &outcomes[i]);
    job.origin = i == 1 ? &stream_b : &stream_a;
    scheduler.Submit(std::move(job));
  }
  for (int i = 3; i < 5; ++i) {  // model 1, capped at 4 frames a call: two calls
    ScoreJob job = MakeJob(1, 3, 1.0f, &outcomes[i]);
    job.max_batch_frames = 4;
    scheduler.Submit(std::move(job));
  }
  backend_.SetGate(true);
  for (int i = 0; i < 3; ++i) ExpectScores(outcomes[i], 2, 1.0f);
  for (int i = 3; i < 5; ++i) ExpectScores(outcomes[i], 3, 1.0f);
  scheduler.Stop();
  // The first job alone; then one call with model 0's three chunks and
  // model 1's first (3 origins: two streams and model 1's job), and model
  // 1's second chunk in a call of its own (its cap).
  absl::MutexLock lock(&mu);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].frames, 1);
  EXPECT_EQ(reports[0].jobs, 1);
  int64_t combined = 0, model1_alone = 0;
  for (size_t r = 1; r < reports.size(); ++r) {
    const GroupReport& report = reports[r];
    EXPECT_EQ(report.queue_waits.size(), static_cast<size_t>(report.jobs));
    EXPECT_GE(report.score_time, absl::ZeroDuration());
    if (report.frames == 9) {
      ++combined;
      EXPECT_EQ(report.jobs, 4);
      EXPECT_EQ(report.origins, 3);
    } else {
      ++model1_alone;
      EXPECT_EQ(report.frames, 3);
      EXPECT_EQ(report.jobs, 1);
    }
  }
  EXPECT_EQ(combined, 1);
  EXPECT_EQ(model1_alone, 1);
}

}  // namespace
}  // namespace gmmscore
