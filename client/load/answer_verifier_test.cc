#include "client/load/answer_verifier.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"
#include "proto/wire_convert.h"

namespace gmmscore::load {
namespace {

TEST(MatricesAgreeTest, ToleranceIsAbsoluteNearZeroAndRelativeBeyond) {
  FloatMatrix want(2, 3);
  want.at(0, 0) = -0.5f;
  want.at(1, 2) = -4000.0f;
  FloatMatrix got = want;
  double max_error = 0;
  std::string where;
  EXPECT_TRUE(MatricesAgree(got, want, 1e-3, &max_error, &where));
  EXPECT_EQ(max_error, 0);

  got.at(0, 0) = -0.5f + 5e-4f;  // within 1e-3 absolute
  got.at(1, 2) = -4002.0f;       // 5e-4 relative
  EXPECT_TRUE(MatricesAgree(got, want, 1e-3, &max_error, &where));
  EXPECT_NEAR(max_error, 5e-4, 1e-5);

  got.at(0, 1) = 2e-3f;  // 2e-3 absolute near zero: wrong
  max_error = 0;
  EXPECT_FALSE(MatricesAgree(got, want, 1e-3, &max_error, &where));
  EXPECT_NE(where.find("frame 0 state 1"), std::string::npos) << where;

  got = want;
  got.at(1, 0) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(MatricesAgree(got, want, 1e-3, &max_error, &where));

  EXPECT_FALSE(MatricesAgree(FloatMatrix(2, 2), want, 1e-3, &max_error, &where));
  EXPECT_NE(where.find("shape"), std::string::npos);
}

TEST(MatricesAgreeTest, DroppedStatesOfASparseAnswerMustNotBeatKeptOnes) {
  FloatMatrix want(1, 4);
  const float row[] = {-1.0f, -5.0f, -2.0f, -9.0f};
  std::copy(row, row + 4, want.data());
  FloatMatrix got = want;
  got.at(0, 1) = -INFINITY;  // -5 dropped, -1 and -2 kept: fine
  got.at(0, 3) = -INFINITY;
  double max_error = 0;
  std::string where;
  EXPECT_TRUE(MatricesAgree(got, want, 1e-3, &max_error, &where)) << where;
  EXPECT_EQ(max_error, 0);

  got = want;
  got.at(0, 2) = -INFINITY;  // -2 dropped while -5 was kept: wrong
  EXPECT_FALSE(MatricesAgree(got, want, 1e-3, &max_error, &where));
  EXPECT_NE(where.find("state 2: dropped"), std::string::npos) << where;
}

// Half-precision answers may be off by 2^-11 of the distance below the
// frame's best, and no more than that plus the tolerance.
TEST(MatricesAgreeTest, HalfPrecisionAllowsItsRoundingAndNoMore) {
  FloatMatrix want(1, 3);
  const float row[] = {10.0f, -5000.0f, 9.5f};  // best 10; -5000 is 5010 below it
  std::copy(row, row + 3, want.data());
  FloatMatrix got = want;
  got.at(0, 1) = -5000.0f + 2.0f;  // 2.0 of the allowed 2.446 (+ 5 of tolerance)
  double max_error = 0;
  std::string where;
  EXPECT_FALSE(MatricesAgree(got, want, 1e-4, &max_error, &where)) << "float32: too far";
  max_error = 0;
  EXPECT_TRUE(MatricesAgree(got, want, 1e-4, &max_error, &where, /*half_precision=*/true))
      << where;
  EXPECT_EQ(max_error, 0);
  got.at(0, 1) = -5000.0f + 3.5f;  // 2.446 + 0.5 allowed at 1e-4 relative: too far
  EXPECT_FALSE(MatricesAgree(got, want, 1e-4, &max_error, &where, true));
  EXPECT_NE(where.find("frame 0 state 1"), std::string::npos) << where;
  got = want;
  got.at(0, 0) = 10.01f;  // the best itself is sent exactly: only the tolerance
  EXPECT_FALSE(MatricesAgree(got, want, 1e-4, &max_error, &where, true));
}

// One element off by 1% of max(1, |value|): ten times the tolerance.
void Spoil(FloatMatrix& scores, int64_t row, int64_t col) {
  scores.at(row, col) += 0.01f * std::max(1.0f, std::abs(scores.at(row, col)));
}

class AnswerVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = GenerateSyntheticModel({.num_states = 30, .min_gaussians = 2,
                                         .max_gaussians = 6, .dim = 13, .seed = 5});
    ASSERT_TRUE(model.ok());
    model_ = std::make_shared<const DiagGmmModel>(*std::move(model));
    features_ = std::make_unique<FeatureSource>(FeatureSource::Synthetic(13, 3, model_.get()));
  }

  // The offline scores of stream `stream`'s frames [first, first + n), by
  // `model` (model_ when null).
  FloatMatrix Offline(int stream, int64_t first, int n,
                      std::shared_ptr<const DiagGmmModel> model = nullptr) {
    auto cpu = CreateCpuBackend({.num_threads = 1});
    auto prepared = cpu->Prepare(model != nullptr ? model : model_);
    ScoreResult result;
    EXPECT_TRUE(
        cpu->Score(**prepared, features_->ChunkMatrix(stream, first, n).view(), {}, &result).ok());
    return result.loglikes;
  }

  std::shared_ptr<const DiagGmmModel> model_;
  std::unique_ptr<FeatureSource> features_;
};

TEST_F(AnswerVerifierTest, AcceptsRightAnswersAndCatchesAWrongOne) {
  auto verifier = AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0});
  ASSERT_TRUE(verifier.ok()) << verifier.status();
  for (int k = 0; k < 5; ++k) {
    std::vector<FloatMatrix> scores = {Offline(2, k * 10, 10)};
    (*verifier)->Submit(2, k * 10, 10, std::move(scores));
  }
  VerifyCounts counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 5);
  EXPECT_EQ(counts.mismatched, 0);
  EXPECT_LT(counts.max_error, 1e-5);

  // One element off by 0.01 nats, in chunk 3 (frames 30..39) of stream 2.
  FloatMatrix wrong = Offline(2, 30, 10);
  wrong.at(4, 7) += 0.01f * std::max(1.0f, std::abs(wrong.at(4, 7)));
  (*verifier)->Submit(2, 30, 10, {std::move(wrong)});
  // The right answer for another stream is wrong for this one.
  (*verifier)->Submit(1, 0, 10, {Offline(2, 0, 10)});
  counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 2);
  EXPECT_EQ(counts.mismatched, 2);
  EXPECT_NE(counts.first_mismatch.find("stream 2"), std::string::npos) << counts.first_mismatch;
  EXPECT_NE(counts.first_mismatch.find("frame 4 state 7"), std::string::npos)
      << counts.first_mismatch;
}

TEST_F(AnswerVerifierTest, SamplingIsDeterministicAtTheAskedRate) {
  auto verifier = AnswerVerifier::Create({model_}, features_.get(), {.fraction = 0.1, .seed = 9});
  ASSERT_TRUE(verifier.ok());
  int sampled = 0;
  for (int s = 0; s < 100; ++s) {
    for (int k = 0; k < 100; ++k) {
      const bool a = (*verifier)->ShouldSample(s, k);
      EXPECT_EQ(a, (*verifier)->ShouldSample(s, k));
      sampled += a;
    }
  }
  EXPECT_NEAR(sampled, 1000, 100);
  auto none = AnswerVerifier::Create({model_}, features_.get(), {.fraction = 0});
  EXPECT_FALSE((*none)->ShouldSample(0, 0));
}

TEST_F(AnswerVerifierTest, FullQueueSkipsInsteadOfBlocking) {
  auto verifier =
      AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0, .max_queue = 2});
  ASSERT_TRUE(verifier.ok());
  for (int k = 0; k < 50; ++k) (*verifier)->Submit(0, k * 10, 10, {Offline(0, k * 10, 10)});
  const VerifyCounts counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked + counts.skipped, 50);
  EXPECT_EQ(counts.mismatched, 0);
}

// With after_run nothing is checked while the load runs: the checks wait
// for TakeCounts, and those submitted after it wait for the next one.
TEST_F(AnswerVerifierTest, HeldChecksWaitForTheEndOfTheRun) {
  auto verifier =
      AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0, .after_run = true});
  ASSERT_TRUE(verifier.ok());
  for (int run = 0; run < 2; ++run) {
    for (int k = 0; k < 4; ++k) (*verifier)->Submit(3, k * 10, 10, {Offline(3, k * 10, 10)});
    FloatMatrix wrong = Offline(3, 40, 10);
    Spoil(wrong, 9, 0);
    (*verifier)->Submit(3, 40, 10, {std::move(wrong)});
    // One check takes well under a millisecond here: held ones would be done.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ((*verifier)->CountsSoFar().checked, 0) << "run " << run;
    const VerifyCounts counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, 5);
    EXPECT_EQ(counts.mismatched, 1);
    EXPECT_EQ(counts.skipped, 0);
    EXPECT_NE(counts.first_mismatch.find("frames from 40: frame 9 state 0"), std::string::npos)
        << counts.first_mismatch;
  }
}

TEST_F(AnswerVerifierTest, HeldChecksStopAtTheirMemoryBound) {
  const int64_t one = int64_t{10} * model_->num_states() * sizeof(float);  // a 10-frame matrix
  auto verifier = AnswerVerifier::Create(
      {model_}, features_.get(), {.fraction = 1.0, .after_run = true, .max_held_bytes = 3 * one});
  ASSERT_TRUE(verifier.ok());
  for (int k = 0; k < 10; ++k) (*verifier)->Submit(0, k * 10, 10, {Offline(0, k * 10, 10)});
  VerifyCounts counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 3);
  EXPECT_EQ(counts.skipped, 7);
  // The bound is per run: the next one holds three again.
  for (int k = 0; k < 4; ++k) (*verifier)->Submit(0, k * 10, 10, {Offline(0, k * 10, 10)});
  counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 3);
  EXPECT_EQ(counts.skipped, 1);
}

// Checks of many streams and lengths are scored together, more than one
// batch's frames in all; each is compared with its own rows, so a wrong
// element is found where it is and nowhere else.
TEST_F(AnswerVerifierTest, ABatchComparesEachCheckWithItsOwnRows) {
  auto verifier =
      AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0, .after_run = true});
  ASSERT_TRUE(verifier.ok());
  std::mt19937 rng(std::random_device{}());
  const int wrong_check = std::uniform_int_distribution<int>(0, 149)(rng);
  int frames_in_all = 0;
  for (int i = 0; i < 150; ++i) {
    const int stream = i % 7, frames = 1 + i % 13;
    const int64_t first = 10 * i;
    FloatMatrix scores = Offline(stream, first, frames);
    if (i == wrong_check) Spoil(scores, frames - 1, 29);
    (*verifier)->Submit(stream, first, frames, {std::move(scores)});
    frames_in_all += frames;
  }
  ASSERT_GT(frames_in_all, AnswerVerifier::kBatchFrames);
  const VerifyCounts counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 150);
  EXPECT_EQ(counts.mismatched, 1);
  const int frames = 1 + wrong_check % 13;
  const std::string where = absl::StrFormat("stream %d, model 0, frames from %d: frame %d state 29",
                                            wrong_check % 7, 10 * wrong_check, frames - 1);
  EXPECT_NE(counts.first_mismatch.find(where), std::string::npos) << counts.first_mismatch;
  EXPECT_LT(counts.max_error, 1.0);
}

// An answer as it came off the wire, in slices of `slice` bytes.
LazyStreamAnswer WireAnswer(const std::string& bytes, size_t slice) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice) slices.emplace_back(bytes.substr(at, slice));
  LazyStreamAnswer answer;
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  EXPECT_TRUE((grpc::SerializationTraits<LazyStreamAnswer>::Deserialize(&buffer, &answer).ok()));
  buffer.Release();
  return answer;
}

// Submitted as bytes, an answer is parsed by the verifier; bytes that are
// not an answer are a mismatch, not a check left out.
TEST_F(AnswerVerifierTest, AnswersAsReceivedAreParsedAndChecked) {
  for (const bool after_run : {false, true}) {
    auto verifier = AnswerVerifier::Create({model_}, features_.get(),
                                           {.fraction = 1.0, .after_run = after_run});
    ASSERT_TRUE(verifier.ok());
    v1::StreamScoreResponse response;
    response.set_first_frame(20);
    ScoresToProto("m", Offline(4, 20, 10), {}, response.add_scores());
    (*verifier)->SubmitAnswer(4, 20, 10, WireAnswer(response.SerializeAsString(), 1000));
    VerifyCounts counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, 1);
    EXPECT_EQ(counts.mismatched, 0) << counts.first_mismatch;

    // Frames 20..29's scores as if they were 30..39's.
    (*verifier)->SubmitAnswer(4, 30, 10, WireAnswer(response.SerializeAsString(), 7));
    counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, 1);
    EXPECT_EQ(counts.mismatched, 1);
    EXPECT_NE(counts.first_mismatch.find("frames from 30: frame"), std::string::npos)
        << counts.first_mismatch;

    (*verifier)->SubmitAnswer(4, 40, 10, WireAnswer("\xff\xff\xff", 2));
    counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, 1);
    EXPECT_EQ(counts.mismatched, 1);
    EXPECT_NE(counts.first_mismatch.find("frames from 40: the answer is wrong"),
              std::string::npos)
        << counts.first_mismatch;

    // An answer that parses but carries no scores is wrong too.
    v1::StreamScoreResponse empty;
    empty.set_first_frame(50);
    (*verifier)->SubmitAnswer(4, 50, 10, WireAnswer(empty.SerializeAsString(), 100));
    counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, 1);
    EXPECT_EQ(counts.mismatched, 1);
    EXPECT_NE(counts.first_mismatch.find("frames from 50: the answer is wrong: INVALID_ARGUMENT: "
                                         "no scores for model 0"),
              std::string::npos)
        << counts.first_mismatch;
  }
}

// As LoadStream uses it: a copy of the answer it read is submitted, and
// the next read replaces the original's bytes while the copy is held.
TEST_F(AnswerVerifierTest, AHeldAnswerOutlivesTheReadBufferItCameIn) {
  auto verifier =
      AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0, .after_run = true});
  ASSERT_TRUE(verifier.ok());
  v1::StreamScoreResponse first, next;
  first.set_first_frame(0);
  ScoresToProto("m", Offline(5, 0, 10), {}, first.add_scores());
  next.set_first_frame(10);
  ScoresToProto("m", Offline(5, 10, 10), {}, next.add_scores());
  LazyStreamAnswer read = WireAnswer(first.SerializeAsString(), 100);
  (*verifier)->SubmitAnswer(5, 0, 10, read);
  read = WireAnswer(next.SerializeAsString(), 100);  // the stream's next read
  (*verifier)->SubmitAnswer(5, 10, 10, read);
  read.bytes.Clear();
  const VerifyCounts counts = (*verifier)->TakeCounts();
  EXPECT_EQ(counts.checked, 2);
  EXPECT_EQ(counts.mismatched, 0) << counts.first_mismatch;
}

// Two models, answers that leave one out, and one that does not parse, in
// one batch: each matrix is still compared with its own rows.
TEST_F(AnswerVerifierTest, ABatchWithMissingMatricesAndABadAnswerKeepsItsRows) {
  auto other = GenerateSyntheticModel({.num_states = 17, .min_gaussians = 1,
                                       .max_gaussians = 4, .dim = 13, .seed = 8});
  ASSERT_TRUE(other.ok());
  auto second = std::make_shared<const DiagGmmModel>(*std::move(other));
  for (const bool bad_answer : {true, false}) {
    auto verifier = AnswerVerifier::Create({model_, second}, features_.get(),
                                           {.fraction = 1.0, .after_run = true});
    ASSERT_TRUE(verifier.ok());
    int matrices = 0;
    for (int i = 0; i < 12; ++i) {
      const int frames = 3 + i % 5;
      std::vector<FloatMatrix> scores(2);
      if (i % 3 != 0) scores[0] = Offline(i, 20 * i, frames);  // every third: no model 0
      if (i % 4 != 1) scores[1] = Offline(i, 20 * i, frames, second);  // some: no model 1
      if (i == 10) {
        ASSERT_GT(scores[1].rows(), 0);
        Spoil(scores[1], frames - 1, 16);
      }
      matrices += (scores[0].rows() > 0) + (scores[1].rows() > 0);
      (*verifier)->Submit(i, 20 * i, frames, std::move(scores));
      if (i == 5 && bad_answer) (*verifier)->SubmitAnswer(99, 0, 10, WireAnswer("\x0a\xff", 2));
    }
    const VerifyCounts counts = (*verifier)->TakeCounts();
    EXPECT_EQ(counts.checked, matrices + bad_answer);
    EXPECT_EQ(counts.mismatched, 1 + bad_answer);
    // Stream 10's chunk has 3 + 10 % 5 = 3 frames; its last is spoiled.
    const std::string where = bad_answer
                                  ? "stream 99, frames from 0: the answer is wrong"
                                  : "stream 10, model 1, frames from 200: frame 2 state 16";
    EXPECT_NE(counts.first_mismatch.find(where), std::string::npos) << counts.first_mismatch;
  }
}

// Field `field` (3 = state, 19 = nice, 41 = policy) of /proc/self/task/TID/stat
// for the first thread whose name (comm) or TID is `who`, or -100 when there
// is none (or it just exited).
int StatOfThread(const std::string& who, int field) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || (name != who && task.path().filename() != who)) continue;
    std::ifstream stat_file(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    // Fields after the name "(comm)", which may hold spaces: state is field 3.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 > stat.size()) return -100;
    std::istringstream after(stat.substr(close + 2));
    std::string value;
    for (int i = 3; i <= field && after >> value; ++i) {
      if (i == field) return std::atoi(value.c_str());
    }
  }
  return -100;
}

TEST_F(AnswerVerifierTest, ItsThreadRunsAtTheLowestPriority) {
  constexpr int kNice = 19, kPolicy = 41;
  auto verifier = AnswerVerifier::Create({model_}, features_.get(), {.fraction = 1.0});
  ASSERT_TRUE(verifier.ok());
  // The thread names and lowers itself as it starts: SCHED_IDLE, or nice 19
  // where a sandbox refuses SCHED_IDLE.
  bool lowest = false;
  for (int tries = 0; tries < 500 && !lowest; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lowest = StatOfThread("load-verify", kPolicy) == SCHED_IDLE ||
             StatOfThread("load-verify", kNice) == 19;
  }
  EXPECT_TRUE(lowest) << "policy " << StatOfThread("load-verify", kPolicy) << ", nice "
                      << StatOfThread("load-verify", kNice);
  // The fields are read where they are: this thread's as the kernel says.
  const std::string self = std::to_string(syscall(SYS_gettid));
  EXPECT_EQ(StatOfThread(self, kPolicy), sched_getscheduler(0));
  EXPECT_EQ(StatOfThread(self, kNice), getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))));
  EXPECT_EQ(StatOfThread("no-such-thread", kPolicy), -100);
}

// Held checks run on a pool of threads once the run is over; a generator
// done before the others must not take their cores: the pool's threads are
// at the lowest priority too.
TEST_F(AnswerVerifierTest, ThePoolForHeldChecksRunsAtTheLowestPriority) {
  constexpr int kNice = 19, kPolicy = 41;
  ASSERT_EQ(StatOfThread("gs-cpu", kPolicy), -100) << "another test's pool is still alive";
  auto verifier = AnswerVerifier::Create(
      {model_}, features_.get(), {.fraction = 1.0, .after_run = true, .after_run_threads = 3});
  ASSERT_TRUE(verifier.ok());
  // The pool's threads name themselves as they start.
  bool lowest = false;
  for (int tries = 0; tries < 500 && !lowest; ++tries) {
    lowest = StatOfThread("gs-cpu", kPolicy) == SCHED_IDLE || StatOfThread("gs-cpu", kNice) == 19;
    if (!lowest) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(lowest) << "policy " << StatOfThread("gs-cpu", kPolicy) << ", nice "
                      << StatOfThread("gs-cpu", kNice);
}

}  // namespace
}  // namespace gmmscore::load
