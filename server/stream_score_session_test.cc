// StreamScoreSession driven through a scripted StreamCall (no gRPC): each
// way a stream ends, step by step, with the call's rules checked on every
// step (one read and one write at a time, the final status once and never
// with a write in flight, nothing after OnDone) and the session gone at the
// end. Scoring is real: a CPU backend behind a BatchScheduler.
#include "server/stream_score_session.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/state_selection.h"
#include "kernels/backends/backend_factory.h"
#include "proto/wire_convert.h"
#include "tests/forwarding_backend.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr int kDim = 5;
constexpr int kStates = 7;

// Records what the session asks of its call; the test plays gRPC's part.
class ScriptedCall final : public StreamCall {
 public:
  void Bind(StreamCallEvents* events) override { events_ = events; }
  void Read(StreamRequestIn* request) override {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(read_, nullptr) << "a second read while one is in flight";
    EXPECT_FALSE(status_.has_value()) << "a read after the final status";
    read_ = request;
  }
  void Write(const grpc::ByteBuffer* answer) override {
    absl::MutexLock lock(&mu_);
    EXPECT_FALSE(write_in_flight_) << "a second write while one is in flight";
    EXPECT_FALSE(status_.has_value()) << "a write after the final status";
    write_in_flight_ = true;
    // As the client's stub does: the bytes must parse as an answer.
    grpc::ByteBuffer bytes(*answer);
    v1::StreamScoreResponse response;
    EXPECT_TRUE(grpc::SerializationTraits<v1::StreamScoreResponse>::Deserialize(&bytes, &response).ok())
        << "an answer that is not a StreamScoreResponse";
    written_.push_back(std::move(response));
  }
  void SendStatus(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    EXPECT_FALSE(status_.has_value()) << "a second final status";
    EXPECT_FALSE(write_in_flight_) << "the final status with a write in flight";
    status_ = status;
  }
  void Cancel() override {
    absl::MutexLock lock(&mu_);
    ++cancels_;
  }

  // The client sends `request`: completes the read in flight.
  void Deliver(const v1::StreamScoreRequest& request) {
    StreamRequestIn* target = TakeRead();
    ASSERT_NE(target, nullptr) << "no read in flight";
    target->message = request;
    target->status = absl::OkStatus();
    events_->OnReadDone(true);
  }
  // The client sends bytes that do not decode.
  void DeliverUndecodable() {
    StreamRequestIn* target = TakeRead();
    ASSERT_NE(target, nullptr) << "no read in flight";
    target->status = absl::InvalidArgumentError("not a StreamScoreRequest");
    events_->OnReadDone(true);
  }
  // The read in flight fails: the client half-closed (or the call ended).
  void EndReads() {
    if (TakeRead() != nullptr) events_->OnReadDone(false);
  }
  // Waits for the n-th write (1-based) to be in flight.
  bool AwaitWrite(int n) {
    return Await([&] { return static_cast<int>(written_.size()) >= n && write_in_flight_; });
  }
  // Waits for the n-th write, then completes it with `ok`.
  void CompleteWrite(int n, bool ok) {
    ASSERT_TRUE(AwaitWrite(n)) << "write " << n << " never came";
    {
      absl::MutexLock lock(&mu_);
      write_in_flight_ = false;
    }
    events_->OnWriteDone(ok);
  }
  void Cancelled() { events_->OnCancel(); }
  void Done() { events_->OnDone(); }

  std::optional<grpc::Status> AwaitStatus() {
    Await([&] { return status_.has_value(); });
    absl::MutexLock lock(&mu_);
    return status_;
  }
  bool ReadInFlight() {
    absl::MutexLock lock(&mu_);
    return read_ != nullptr;
  }
  bool HasStatus() {
    absl::MutexLock lock(&mu_);
    return status_.has_value();
  }
  int cancels() {
    absl::MutexLock lock(&mu_);
    return cancels_;
  }
  v1::StreamScoreResponse written(int i) {
    absl::MutexLock lock(&mu_);
    return written_.at(i);
  }
  int writes() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(written_.size());
  }

 private:
  StreamRequestIn* TakeRead() {
    absl::MutexLock lock(&mu_);
    return std::exchange(read_, nullptr);
  }
  // Waits up to 30 s (scoring runs on the scheduler's threads).
  bool Await(const std::function<bool()>& done) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done, &std::function<bool()>::operator()),
                                absl::Seconds(30));
    // (done reads the guarded members with mu_ held by AwaitWithTimeout.)
  }

  StreamCallEvents* events_ = nullptr;
  absl::Mutex mu_;
  StreamRequestIn* read_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<v1::StreamScoreResponse> written_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);
  int cancels_ ABSL_GUARDED_BY(mu_) = 0;
};

// The CPU backend returning top_k selections as the CUDA backend does
// (ScoringBackend::ReturnsSelected), or, with `select_for_real` false,
// saying it selects and returning dense scores: what a stream's charge
// meets when a chunk comes back larger than admitted.
class SelectingBackend final : public ForwardingBackend {
 public:
  SelectingBackend(std::unique_ptr<ScoringBackend> inner, bool select_for_real)
      : ForwardingBackend(std::move(inner)), select_for_real_(select_for_real) {}
  bool ReturnsSelected(const PreparedModel& model, const StateSelection& select) const override {
    return select.top_k > 0 && select.top_k < model.num_states();
  }
  absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) override {
    absl::Status status = inner().ScoreBatch(jobs, options);
    if (!status.ok() || !select_for_real_) return status;
    for (const ScoreWindow& job : jobs) {
      if (!ReturnsSelected(*job.model, job.select)) continue;
      job.result->sparse = SelectStates(job.result->loglikes.view(), job.select);
      job.result->loglikes = FloatMatrix();
    }
    return status;
  }

 private:
  const bool select_for_real_;
};

class StreamScoreSessionTest : public ::testing::Test {
 protected:
  // The backend the stream scores on: the CPU backend, unless a test's
  // fixture wraps it.
  virtual std::unique_ptr<ScoringBackend> Wrap(std::unique_ptr<ScoringBackend> cpu) { return cpu; }

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ScoringBackend>> backend = CreateBackend("cpu");
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = Wrap(*std::move(backend));
    absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
        {.num_states = kStates, .min_gaussians = 1, .max_gaussians = 2, .dim = kDim, .seed = 4});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_shared<const DiagGmmModel>(*std::move(model));
    auto repository = ModelRepository::FromModels({{"m", model_}}, backend_.get());
    ASSERT_TRUE(repository.ok()) << repository.status();
    repository_ = *std::move(repository);
    scheduler_ = std::make_unique<BatchScheduler>(backend_.get(), BatchSchedulerOptions{});
    router_ = std::make_unique<DeviceRouter>(std::vector<BatchScheduler*>{scheduler_.get()},
                                             std::vector<std::string>{"cpu"});
    env_ = {.repository = repository_.get(),
            .router = router_.get(),
            .registry = &registry_,
            .write_timeout = absl::Seconds(30),
            .answer_budget = &budget_,
            .sessions_alive = &alive_,
            .answer_memory_waits = &memory_waits_,
            .stalled_streams = &stalled_};
  }
  void TearDown() override {
    // Every test ends with the session gone and nothing held.
    EXPECT_EQ(alive_.load(), 0);
    EXPECT_EQ(budget_.held(), 0);
    EXPECT_EQ(registry_.live_streams(), 0);
    scheduler_->Stop();
  }

  StreamScoreSession* Open(const absl::Status& refused = absl::OkStatus()) {
    return new StreamScoreSession(env_, &call_, "test-peer", absl::InfiniteFuture(), refused);
  }
  static v1::StreamScoreRequest Config(int top_k = 0) {
    v1::StreamScoreRequest request;
    request.mutable_config()->add_models("m");
    request.mutable_config()->mutable_output()->set_top_k(top_k);
    return request;
  }
  static v1::StreamScoreRequest Chunk(int frames, float value = 0.5f) {
    v1::StreamScoreRequest request;
    FeaturesToProto(FloatMatrix(frames, kDim, value).view(), request.mutable_chunk());
    return request;
  }
  // Polls until the session object is gone (its last job's reference may be
  // released on a scheduler thread just after the final status).
  bool AwaitDeleted() {
    const absl::Time end = absl::Now() + absl::Seconds(30);
    while (alive_.load() != 0 && absl::Now() < end) absl::SleepFor(absl::Milliseconds(1));
    return alive_.load() == 0;
  }

  std::unique_ptr<ScoringBackend> backend_;
  std::shared_ptr<const DiagGmmModel> model_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<BatchScheduler> scheduler_;
  StreamRegistry registry_{16};
  AnswerBudget budget_{int64_t{1} << 30};
  std::atomic<int64_t> alive_{0};
  std::atomic<int64_t> stalled_{0};
  std::atomic<int64_t> memory_waits_{0};
  std::unique_ptr<DeviceRouter> router_;
  StreamEnvironment env_;
  ScriptedCall call_;
};

TEST_F(StreamScoreSessionTest, HalfCloseAnswersEveryChunkThenOk) {
  Open();
  EXPECT_EQ(alive_.load(), 1);
  call_.Deliver(Config());
  call_.Deliver(Chunk(3));
  call_.Deliver(Chunk(4));
  call_.EndReads();  // half-close
  call_.CompleteWrite(1, true);
  EXPECT_FALSE(call_.HasStatus());  // the second answer is still due
  call_.CompleteWrite(2, true);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok()) << status->error_message();
  EXPECT_EQ(call_.written(0).first_frame(), 0);
  EXPECT_EQ(call_.written(1).first_frame(), 3);
  ASSERT_EQ(call_.written(1).scores_size(), 1);
  EXPECT_EQ(call_.written(1).scores(0).num_frames(), 4u);
  EXPECT_EQ(alive_.load(), 1);  // until OnDone
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

// The wall clock the session stamps answers with (a client's clock_gettime).
int64_t UnixMicrosNow() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// OutputOptions.server_timing: each answer says when its chunk's read
// completed and how long the server held it, here an answer kept waiting
// behind the one before it; a stream that did not ask gets no times.
TEST_F(StreamScoreSessionTest, TimedAnswersSayWhenTheirChunkWasReadAndHowLongItWasHeld) {
  Open();
  v1::StreamScoreRequest config = Config();
  config.mutable_config()->mutable_output()->set_server_timing(true);
  call_.Deliver(config);
  const int64_t first_before = UnixMicrosNow();
  call_.Deliver(Chunk(3));
  const int64_t first_after = UnixMicrosNow();
  ASSERT_TRUE(call_.AwaitWrite(1));
  const int64_t second_before = UnixMicrosNow();
  call_.Deliver(Chunk(2));
  const int64_t second_after = UnixMicrosNow();
  absl::SleepFor(absl::Milliseconds(30));  // the second answer waits for the first's write
  call_.EndReads();
  call_.CompleteWrite(1, true);
  call_.CompleteWrite(2, true);
  const int64_t end = UnixMicrosNow();
  ASSERT_TRUE(call_.AwaitStatus().has_value());
  call_.Done();
  ASSERT_TRUE(AwaitDeleted());

  const v1::ServerTiming first = call_.written(0).timing();
  const v1::ServerTiming second = call_.written(1).timing();
  ASSERT_TRUE(call_.written(0).has_timing());
  ASSERT_TRUE(call_.written(1).has_timing());
  // The read's time is the encoding's less a whole number of microseconds
  // held: up to 1 us past the read.
  EXPECT_GE(first.chunk_read_unix_us(), first_before);
  EXPECT_LE(first.chunk_read_unix_us(), first_after + 1);
  EXPECT_GE(second.chunk_read_unix_us(), second_before);
  EXPECT_LE(second.chunk_read_unix_us(), second_after + 1);
  EXPECT_GE(first.held_us(), 0);
  EXPECT_LE(first.chunk_read_unix_us() + first.held_us(), second_before);  // built before the write
  EXPECT_GE(second.held_us(), 30'000);
  EXPECT_LE(second.chunk_read_unix_us() + second.held_us(), end);
}

TEST_F(StreamScoreSessionTest, AnswersCarryNoTimesUnlessAsked) {
  Open();
  call_.Deliver(Config());
  call_.Deliver(Chunk(3));
  call_.EndReads();
  call_.CompleteWrite(1, true);
  ASSERT_TRUE(call_.AwaitStatus().has_value());
  call_.Done();
  ASSERT_TRUE(AwaitDeleted());
  EXPECT_FALSE(call_.written(0).has_timing());
}

TEST_F(StreamScoreSessionTest, CancelDuringAWriteEndsCancelledAndFreesTheSession) {
  Open();
  call_.Deliver(Config());
  call_.Deliver(Chunk(5));
  ASSERT_TRUE(call_.ReadInFlight());
  ASSERT_TRUE(call_.AwaitWrite(1));
  call_.Cancelled();
  call_.EndReads();
  call_.CompleteWrite(1, false);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::CANCELLED);
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

TEST_F(StreamScoreSessionTest, DrainAnswersThePendingChunksThenUnavailable) {
  StreamScoreSession* session = Open();
  call_.Deliver(Config());
  call_.Deliver(Chunk(6));
  call_.Deliver(Chunk(4));
  // The first answer is being written, the second waits for it: both are
  // due before the drain's status.
  ASSERT_TRUE(call_.ReadInFlight());
  session->AddHold();  // as the registry holds a stream while draining it
  session->Drain();
  session->ReleaseHold();
  call_.CompleteWrite(1, true);
  EXPECT_FALSE(call_.HasStatus());
  call_.CompleteWrite(2, true);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status->error_message(), HasSubstr("frames [0, 10) of this stream were answered"));
  call_.EndReads();  // the read in flight fails once the call is over
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

// 10 frames of 7 states: 320 bytes dense (a total a frame too); top_k 1
// selected, 164 bytes (a value, an id and a total a frame, 11 offsets). A
// server budget of 200 takes the selection only; one of 400 two selections
// but not a dense chunk and a selection.
constexpr int64_t kBetweenSelectedAndDense = 200;
constexpr int64_t kTwoSelectionsOnly = 400;

TEST_F(StreamScoreSessionTest, TopKOnABackendThatDoesNotSelectIsChargedDense) {
  AnswerBudget small(kBetweenSelectedAndDense);
  env_.answer_budget = &small;
  Open();
  call_.Deliver(Config(/*top_k=*/1));
  call_.Deliver(Chunk(10));
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status->error_message(), HasSubstr("--answer_memory_mb"));
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
  EXPECT_EQ(small.held(), 0);
}

class SelectingSessionTest : public StreamScoreSessionTest {
 protected:
  std::unique_ptr<ScoringBackend> Wrap(std::unique_ptr<ScoringBackend> cpu) override {
    return std::make_unique<SelectingBackend>(std::move(cpu), /*select_for_real=*/true);
  }
};

TEST_F(SelectingSessionTest, TopKChunksAreChargedTheirSelection) {
  AnswerBudget small(kBetweenSelectedAndDense);
  env_.answer_budget = &small;
  Open();
  call_.Deliver(Config(/*top_k=*/1));
  call_.Deliver(Chunk(10));
  ASSERT_TRUE(call_.AwaitWrite(1));
  EXPECT_EQ(small.held(), 164);  // the answer being written: its selection
  call_.EndReads();
  call_.CompleteWrite(1, true);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok()) << status->error_message();
  ASSERT_EQ(call_.written(0).scores_size(), 1);
  EXPECT_EQ(call_.written(0).scores(0).num_frames(), 10u);
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
  EXPECT_EQ(small.held(), 0);
}

class DenseDespiteSayingSoSessionTest : public StreamScoreSessionTest {
 protected:
  std::unique_ptr<ScoringBackend> Wrap(std::unique_ptr<ScoringBackend> cpu) override {
    return std::make_unique<SelectingBackend>(std::move(cpu), /*select_for_real=*/false);
  }
};

TEST_F(DenseDespiteSayingSoSessionTest, ResultsLargerThanAdmittedAreChargedWhatTheyHold) {
  AnswerBudget small(kTwoSelectionsOnly);
  env_.answer_budget = &small;
  Open();
  call_.Deliver(Config(/*top_k=*/1));
  call_.Deliver(Chunk(10));  // admitted at 164 bytes, comes back 320
  ASSERT_TRUE(call_.AwaitWrite(1));
  EXPECT_EQ(small.held(), 320);
  // 164 more would fit beside 164, not beside 320: the chunk waits for the
  // answer being written, with no read meanwhile, and is not refused.
  call_.Deliver(Chunk(10));
  EXPECT_FALSE(call_.ReadInFlight());
  EXPECT_EQ(small.held(), 320);
  EXPECT_EQ(memory_waits_.load(), 1);
  EXPECT_EQ(small.refusals(), 0);
  call_.CompleteWrite(1, true);  // its 320 bytes freed: the chunk is taken
  ASSERT_TRUE(call_.AwaitWrite(2));
  EXPECT_EQ(small.held(), 320);
  EXPECT_TRUE(call_.ReadInFlight());
  call_.EndReads();
  call_.CompleteWrite(2, true);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok()) << status->error_message();
  EXPECT_EQ(call_.written(1).first_frame(), 10u);
  EXPECT_EQ(memory_waits_.load(), 1);
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
  EXPECT_EQ(small.held(), 0);
}

TEST_F(DenseDespiteSayingSoSessionTest, AWaitingChunkIsRefusedOnceNothingOfItsStreamCanFreeMemory) {
  AnswerBudget small(kTwoSelectionsOnly);
  env_.answer_budget = &small;
  Open();
  call_.Deliver(Config(/*top_k=*/1));
  call_.Deliver(Chunk(10));  // comes back 320
  ASSERT_TRUE(call_.AwaitWrite(1));
  call_.Deliver(Chunk(10));  // waits for answer memory
  EXPECT_EQ(memory_waits_.load(), 1);
  // Another stream's answers take the room this one's answer will free.
  AnswerCharge others;
  ASSERT_TRUE(small.TryCharge(0, nullptr, &others));
  others.SetTo(300);
  call_.CompleteWrite(1, true);  // 300 + 164 > 400, and nothing of its own left
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status->error_message(),
              HasSubstr("the chunk at frame 10 would take it past its limit"));
  EXPECT_EQ(call_.writes(), 1);
  EXPECT_EQ(small.refusals(), 1);
  EXPECT_EQ(memory_waits_.load(), 1);
  EXPECT_EQ(small.held(), 300);  // the refused chunk holds nothing
  others.Release();
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
  EXPECT_EQ(small.held(), 0);
}

TEST_F(DenseDespiteSayingSoSessionTest, AChunkWaitingForAnswerMemoryIsDroppedWhenTheStreamEnds) {
  AnswerBudget small(kTwoSelectionsOnly);
  env_.answer_budget = &small;
  Open();
  call_.Deliver(Config(/*top_k=*/1));
  call_.Deliver(Chunk(10));
  ASSERT_TRUE(call_.AwaitWrite(1));
  call_.Deliver(Chunk(10));  // waits for answer memory
  EXPECT_EQ(memory_waits_.load(), 1);
  call_.Cancelled();
  call_.CompleteWrite(1, false);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(call_.writes(), 1);  // the waiting chunk was never taken
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
  EXPECT_EQ(small.held(), 0);
  EXPECT_EQ(small.refusals(), 0);
}

TEST_F(StreamScoreSessionTest, ARefusedStreamGetsItsStatusAndNoRead) {
  Open(absl::UnauthenticatedError("no token"));
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(call_.ReadInFlight());
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

TEST_F(StreamScoreSessionTest, AnErrorAnswerWaitsForTheChunksBeforeIt) {
  Open();
  call_.Deliver(Config());
  call_.Deliver(Chunk(2));
  call_.Deliver(Chunk(2, NAN));  // bad: the stream ends after the good one
  EXPECT_FALSE(call_.ReadInFlight());  // no read after the error
  EXPECT_FALSE(call_.HasStatus());
  call_.CompleteWrite(1, true);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status->error_message(), HasSubstr("is nan"));
  EXPECT_EQ(call_.writes(), 1);
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

TEST_F(StreamScoreSessionTest, AnUndecodableMessageIsInvalidArgument) {
  Open();
  call_.Deliver(Config());
  call_.DeliverUndecodable();
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

TEST_F(StreamScoreSessionTest, AWriteTheClientNeverTakesCancelsTheCall) {
  StreamScoreSession* session = Open();
  call_.Deliver(Config());
  call_.Deliver(Chunk(8));
  ASSERT_TRUE(call_.ReadInFlight());
  // Wait for the answer's write, then let the watchdog look before and
  // after the write timeout (30 s: the test's own clock, far from a slow
  // machine's).
  ASSERT_TRUE(call_.AwaitWrite(1));
  EXPECT_GT(budget_.held(), 0);  // the answer being written is counted
  session->AddHold();
  session->EndIfIdle(absl::Now());
  EXPECT_EQ(call_.cancels(), 0);
  session->EndIfIdle(absl::Now() + absl::Seconds(60));
  session->EndIfIdle(absl::Now() + absl::Seconds(90));  // asked once only
  session->ReleaseHold();
  EXPECT_EQ(call_.cancels(), 1);
  EXPECT_EQ(stalled_.load(), 1);
  EXPECT_FALSE(call_.HasStatus());  // the write is still in flight
  // gRPC's side of the cancellation.
  call_.Cancelled();
  call_.EndReads();
  call_.CompleteWrite(1, false);
  const std::optional<grpc::Status> status = call_.AwaitStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->ok());
  call_.Done();
  EXPECT_TRUE(AwaitDeleted());
}

}  // namespace
}  // namespace gmmscore
