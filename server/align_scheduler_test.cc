// AlignScheduler's policy with real aligners (pocketsphinx's en-us model and
// cmudict on the CPU backend; skipped without them) on synthetic frames:
// batches of at most max_batch, one model's requests together, full queue,
// dead requests dropped, Stop aligning what is queued, then refusing.
#include "server/align_scheduler.h"

#include <sys/stat.h>

#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kModel = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kDict = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";

// Completions, collected.
struct Results {
  absl::Mutex mu;
  std::vector<absl::StatusOr<AlignOutcome>> outcomes ABSL_GUARDED_BY(mu);

  absl::AnyInvocable<void(absl::StatusOr<AlignOutcome>)> Done() {
    return [this](absl::StatusOr<AlignOutcome> outcome) {
      absl::MutexLock lock(&mu);
      outcomes.push_back(std::move(outcome));
    };
  }
  size_t size() {
    absl::MutexLock lock(&mu);
    return outcomes.size();
  }
  void WaitFor(size_t n) {
    absl::MutexLock lock(&mu);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return outcomes.size() >= n; };
    mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60));
  }
};

class AlignSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat info;
    if (::stat(kModel.c_str(), &info) != 0 || ::stat(kDict.c_str(), &info) != 0) {
      GTEST_SKIP() << "pocketsphinx en-us is missing: run tools/install_deps.sh";
    }
    backend_ = CreateCpuBackend({.num_threads = 2});
    for (auto* aligner : {&first_, &second_}) {
      auto created = ModelAligner::Create(kModel, kDict, backend_.get(), {.threads = 1});
      ASSERT_TRUE(created.ok()) << created.status();
      *aligner = *std::move(created);
    }
  }

  // A 200-frame utterance of two words (silent frames: any path will do).
  AlignJob Job(const std::shared_ptr<ModelAligner>& aligner, Results* results) {
    return {.aligner = aligner,
            .utterance = "u",
            .words = {"he", "was"},
            .features = frames_,
            .queued_frames = frames_->rows(),
            .done = results->Done()};
  }

  std::unique_ptr<ScoringBackend> backend_;
  std::shared_ptr<ModelAligner> first_, second_;
  const std::shared_ptr<const FloatMatrix> frames_ = std::make_shared<const FloatMatrix>(200, 39);
};

TEST_F(AlignSchedulerTest, WaitingRequestsOfOneModelAreAlignedTogetherUpToMaxBatch) {
  std::vector<int64_t> batches;
  absl::Mutex mu;
  AlignScheduler scheduler({.max_batch = 3,
                            .max_queue_delay = absl::Seconds(10),  // only full batches, or Stop
                            .on_batch = [&](const AlignBatchReport& report) {
                              absl::MutexLock lock(&mu);
                              batches.push_back(report.utterances);
                            }});
  Results results;
  for (int i = 0; i < 7; ++i) scheduler.Submit(Job(first_, &results));
  results.WaitFor(6);  // two full batches of 3
  EXPECT_EQ(results.size(), 6u);
  scheduler.Stop();  // the last one, alone
  ASSERT_EQ(results.size(), 7u);
  absl::MutexLock lock(&results.mu);
  for (const auto& outcome : results.outcomes) {
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(outcome->frames, 200);
  }
  EXPECT_EQ(results.outcomes.back()->batch_utterances, 1);
  EXPECT_EQ(batches, (std::vector<int64_t>{3, 3, 1}));
  const AlignSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.batches, 3);
  EXPECT_EQ(stats.aligned, 7);
  EXPECT_EQ(stats.frames_aligned, 1400);
  EXPECT_EQ(stats.max_batch_utterances, 3);
}

TEST_F(AlignSchedulerTest, EachModelsRequestsAreBatchedApartOnTwoWorkers) {
  AlignScheduler scheduler({.max_batch = 8, .max_queue_delay = absl::Milliseconds(50), .num_workers = 2});
  Results a, b;
  for (int i = 0; i < 3; ++i) {
    scheduler.Submit(Job(first_, &a));
    scheduler.Submit(Job(second_, &b));
  }
  a.WaitFor(3);
  b.WaitFor(3);
  for (Results* results : {&a, &b}) {
    absl::MutexLock lock(&results->mu);
    for (const auto& outcome : results->outcomes) {
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      EXPECT_EQ(outcome->batch_utterances, 3) << "one batch per model, of its own requests";
    }
  }
  EXPECT_EQ(scheduler.stats().batches, 2);
}

TEST_F(AlignSchedulerTest, AFullQueueRefusesAndDeadRequestsLeaveUnaligned) {
  AlignScheduler scheduler({.max_queue_delay = absl::Seconds(10), .max_queued_frames = 300});
  Results results;
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  AlignJob first = Job(first_, &results);
  first.cancelled = cancelled;
  scheduler.Submit(std::move(first));  // an empty queue admits anything
  scheduler.Submit(Job(first_, &results));
  ASSERT_EQ(results.size(), 1u);
  {
    absl::MutexLock lock(&results.mu);
    EXPECT_EQ(results.outcomes[0].status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(results.outcomes[0].status().message(), HasSubstr("200 frames waiting, limit 300"));
  }
  cancelled->store(true);
  scheduler.PurgeDead();
  ASSERT_EQ(results.size(), 2u);
  AlignJob late = Job(first_, &results);
  late.deadline = absl::Now() + absl::Milliseconds(20);
  scheduler.Submit(std::move(late));  // room again; expires while it waits for company
  results.WaitFor(3);
  absl::MutexLock lock(&results.mu);
  EXPECT_EQ(results.outcomes[1].status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(results.outcomes[2].status().code(), absl::StatusCode::kDeadlineExceeded);
  const AlignSchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.rejected, 1);
  EXPECT_EQ(stats.cancelled, 1);
  EXPECT_EQ(stats.expired, 1);
  EXPECT_EQ(stats.batches, 0);
  EXPECT_EQ(stats.queued_frames, 0);
}

TEST_F(AlignSchedulerTest, StopAlignsWhatIsQueuedThenRefuses) {
  Results results;
  {
    AlignScheduler scheduler({.max_queue_delay = absl::Seconds(10)});
    AlignJob audio = Job(first_, &results);
    audio.features = nullptr;
    audio.audio = std::make_shared<const PcmAudio>(PcmAudio{16000, std::vector<int16_t>(32000)});
    scheduler.Submit(std::move(audio));  // 2 s of silence through the front end
    scheduler.Submit(Job(first_, &results));
    scheduler.Stop();
    ASSERT_EQ(results.size(), 2u);
    scheduler.Submit(Job(first_, &results));
    ASSERT_EQ(results.size(), 3u);
  }
  absl::MutexLock lock(&results.mu);
  ASSERT_TRUE(results.outcomes[0].ok()) << results.outcomes[0].status();
  EXPECT_GT(results.outcomes[0]->features_time, absl::ZeroDuration());
  EXPECT_NEAR(results.outcomes[0]->frames, 200, 1);
  EXPECT_TRUE(results.outcomes[1].ok()) << results.outcomes[1].status();
  EXPECT_EQ(results.outcomes[2].status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(AlignSchedulerTest, EngineErrorsBecomeTheRpcsCodes) {
  AlignScheduler scheduler({.max_queue_delay = absl::ZeroDuration()});
  Results results;
  AlignJob oov = Job(first_, &results);
  oov.words = {"he", "zzqqxx"};
  scheduler.Submit(std::move(oov));
  AlignJob short_one = Job(first_, &results);
  short_one.features = std::make_shared<const FloatMatrix>(4, 39);
  short_one.queued_frames = 4;
  scheduler.Submit(std::move(short_one));
  results.WaitFor(2);
  absl::MutexLock lock(&results.mu);
  ASSERT_EQ(results.outcomes.size(), 2u);
  // One worker: completions in the order submitted.
  EXPECT_EQ(results.outcomes[0].status().code(), absl::StatusCode::kInvalidArgument) << results.outcomes[0].status();
  EXPECT_THAT(results.outcomes[0].status().message(), HasSubstr("\"zzqqxx\" (word 2)"));
  EXPECT_EQ(results.outcomes[1].status().code(), absl::StatusCode::kOutOfRange) << results.outcomes[1].status();
  EXPECT_THAT(results.outcomes[1].status().message(), HasSubstr("4 frames"));
  EXPECT_EQ(ClientAlignStatus(absl::NotFoundError("w")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientAlignStatus(absl::FailedPreconditionError("f")).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ClientAlignStatus(absl::InternalError("i")).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gmmscore
