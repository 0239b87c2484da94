// Limits and backpressure, each returning its code: a full scheduler queue
// refuses new chunks and requests with RESOURCE_EXHAUSTED (and the work
// already queued is answered); a cancelled stream's and an expired
// request's queued jobs leave the queue promptly, unscored; an idle stream
// ends with DEADLINE_EXCEEDED saying it was idle while a slow but live one
// carries on; a message over --max_message_mb is RESOURCE_EXHAUSTED; a
// connection past --max_connection_age_s plus its grace is closed, its
// streams end, and the client's next stream goes over a new connection.
//
// The daemon runs on a backend whose calls can be held (GatedBackend), so
// that "the backend is busy" is a state the test sets, not a race it hopes
// to win on a loaded machine.
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/backends/backend_factory.h"
#include "proto/wire_convert.h"
#include "server/daemon.h"
#include "server/log.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

// The CPU backend, with every Score call held while the gate is closed.
class GatedBackend final : public ScoringBackend {
 public:
  explicit GatedBackend(std::unique_ptr<ScoringBackend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) override {
    return inner_->Prepare(std::move(model));
  }
  absl::Status Score(const PreparedModel& model, ConstMatrixView features,
                     const ScoreOptions& options, ScoreResult* result) override {
    {
      absl::MutexLock lock(&mu_);
      ++calls_;
      mu_.Await(absl::Condition(&open_));
    }
    return inner_->Score(model, features, options, result);
  }
  void SetOpen(bool open) {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  const std::unique_ptr<ScoringBackend> inner_;
  absl::Mutex mu_;
  bool open_ = true;
  int calls_ = 0;
};

constexpr int kDim = 4;

class OpsLimitsTest : public ::testing::Test {
 protected:
  // A daemon with one model "m" (kDim dims) on a GatedBackend, one
  // scheduler worker.
  void Start(DaemonOptions options) {
    SetInfoLogging(false);
    absl::StatusOr<std::unique_ptr<ScoringBackend>> cpu = CreateBackend("cpu");
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto gated = std::make_unique<GatedBackend>(*std::move(cpu));
    gate_ = gated.get();
    absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
        {.num_states = 6, .min_gaussians = 1, .max_gaussians = 2, .dim = kDim, .seed = 3});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_shared<const DiagGmmModel>(*std::move(model));
    auto repository = ModelRepository::FromModels({{"m", model_}}, gated.get());
    ASSERT_TRUE(repository.ok()) << repository.status();
    options.listen_address = "127.0.0.1:0";
    options.scheduler.num_workers = 1;
    auto daemon = Daemon::Start(std::move(gated), *std::move(repository), options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    auto client = Client::Connect(daemon_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  void TearDown() override {
    if (gate_ != nullptr) gate_->SetOpen(true);  // never leave a worker blocked
    client_.reset();
    daemon_.reset();
  }

  FloatMatrix Frames(int64_t rows) { return TestFeatures(*model_, rows, rows); }

  // A unary Score request of `rows` frames for model "m".
  v1::ScoreRequest UnaryRequest(int64_t rows) {
    v1::ScoreRequest request;
    request.add_models("m");
    FeaturesToProto(Frames(rows).view(), request.mutable_features());
    return request;
  }

  std::unique_ptr<StreamSession> OpenStream() {
    v1::StreamConfig config;
    config.add_models("m");
    auto session = client_->StartStream(config);
    EXPECT_TRUE(session.ok());
    return *std::move(session);
  }

  // Blocks the backend: one chunk dispatched and held in the backend.
  std::unique_ptr<StreamSession> OccupyBackend() {
    gate_->SetOpen(false);
    std::unique_ptr<StreamSession> busy = OpenStream();
    EXPECT_TRUE(busy->Push(Frames(1).view()).ok());
    EXPECT_TRUE(WaitFor([&] { return gate_->calls() >= 1; }));
    return busy;
  }

  // Polls `done` for up to 30 s (the machine may be loaded).
  static bool WaitFor(const std::function<bool()>& done) {
    const absl::Time end = absl::Now() + absl::Seconds(30);
    while (!done()) {
      if (absl::Now() > end) return false;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return true;
  }

  int64_t QueuedFrames() { return daemon_->scheduler_stats().queued_frames; }

  GatedBackend* gate_ = nullptr;
  std::shared_ptr<const DiagGmmModel> model_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(OpsLimitsTest, FullQueueRefusesNewChunksAndRequestsWithResourceExhausted) {
  DaemonOptions options;
  options.scheduler.max_queued_frames = 20;
  Start(options);
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  std::unique_ptr<StreamSession> a = OpenStream();
  std::unique_ptr<StreamSession> b = OpenStream();
  ASSERT_TRUE(a->Push(Frames(10).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 10; }));
  ASSERT_TRUE(b->Push(Frames(10).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 20; }));

  // The queue is full: a new stream's chunk and a unary request are refused
  // while the backend is still held, not queued behind it.
  std::unique_ptr<StreamSession> refused = OpenStream();
  ASSERT_TRUE(refused->Push(Frames(5).view()).ok());
  absl::StatusOr<StreamAnswer> answer = refused->Next();
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kResourceExhausted) << answer.status();
  EXPECT_NE(answer.status().message().find("queue is full"), std::string::npos)
      << answer.status();
  v1::ScoreRequest request = UnaryRequest(3);
  absl::StatusOr<v1::ScoreResponse> unary = client_->Score(request);
  EXPECT_EQ(unary.status().code(), absl::StatusCode::kResourceExhausted) << unary.status();
  EXPECT_EQ(gate_->calls(), 1);
  EXPECT_EQ(daemon_->scheduler_stats().rejected_jobs, 2);

  // What was admitted is answered once the backend moves again.
  gate_->SetOpen(true);
  for (StreamSession* session : {busy.get(), a.get(), b.get()}) {
    absl::StatusOr<StreamAnswer> got = session->Next();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(session->Finish().ok());
  }
  // And new work is taken again.
  EXPECT_TRUE(client_->Score(request).ok());
}

// --queue_full_wait_ms: a chunk that finds the queue full waits for room
// and its stream lives on; while it waits, new streams and requests are
// refused (the device is overloaded), not queued behind it.
TEST_F(OpsLimitsTest, AChunkFindingTheQueueFullWaitsForRoomAndItsStreamCarriesOn) {
  DaemonOptions options;
  options.scheduler.max_queued_frames = 20;
  options.scheduler.full_queue_wait = absl::Seconds(60);
  Start(options);
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  std::unique_ptr<StreamSession> a = OpenStream();
  std::unique_ptr<StreamSession> b = OpenStream();
  ASSERT_TRUE(a->Push(Frames(10).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 10; }));
  ASSERT_TRUE(b->Push(Frames(10).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 20; }));
  ASSERT_TRUE(a->Push(Frames(5).view()).ok());  // the queue is full: it waits
  ASSERT_TRUE(WaitFor([&] { return daemon_->scheduler_stats().waiting_jobs == 1; }));

  std::unique_ptr<StreamSession> late = OpenStream();
  late->Push(Frames(2).view()).IgnoreError();  // may already find the stream ended
  absl::StatusOr<StreamAnswer> answer = late->Next();
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kResourceExhausted) << answer.status();
  EXPECT_NE(answer.status().message().find("wait for room in its full queue"), std::string::npos)
      << answer.status();
  v1::ScoreRequest request = UnaryRequest(3);
  EXPECT_EQ(client_->Score(request).status().code(), absl::StatusCode::kResourceExhausted);

  gate_->SetOpen(true);
  ASSERT_TRUE(busy->Next().ok());
  for (int rows : {10, 5}) {
    absl::StatusOr<StreamAnswer> got = a->Next();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->scores.rows(), rows);
  }
  ASSERT_TRUE(b->Next().ok());
  for (StreamSession* session : {busy.get(), a.get(), b.get()}) EXPECT_TRUE(session->Finish().ok());
  const BatchSchedulerStats stats = daemon_->scheduler_stats();
  EXPECT_EQ(stats.rejected_jobs, 0);
  EXPECT_EQ(stats.waited_jobs, 1);
  EXPECT_EQ(stats.waiting_jobs, 0);
  EXPECT_TRUE(client_->Score(request).ok());  // caught up
}

// Overload: once the oldest queued chunk has waited --overload_queue_ms, new
// streams and requests are refused, while the streams already admitted go on
// queueing and are answered when the device catches up.
TEST_F(OpsLimitsTest, AnOverloadedDeviceRefusesNewStreamsAndRequestsButNotAdmittedOnes) {
  DaemonOptions options;
  options.scheduler.overload_wait = absl::Milliseconds(100);
  Start(options);
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  std::unique_ptr<StreamSession> admitted = OpenStream();
  ASSERT_TRUE(admitted->Push(Frames(4).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 4; }));
  absl::SleepFor(absl::Milliseconds(150));  // the queued chunk is now too old

  // Refused at its config: the push may already find the stream ended.
  std::unique_ptr<StreamSession> refused = OpenStream();
  refused->Push(Frames(2).view()).IgnoreError();
  absl::StatusOr<StreamAnswer> answer = refused->Next();
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kResourceExhausted) << answer.status();
  EXPECT_NE(answer.status().message().find("--overload_queue_ms"), std::string::npos)
      << answer.status();
  v1::ScoreRequest request = UnaryRequest(3);
  absl::StatusOr<v1::ScoreResponse> unary = client_->Score(request);
  EXPECT_EQ(unary.status().code(), absl::StatusCode::kResourceExhausted) << unary.status();
  EXPECT_EQ(daemon_->scheduler_stats().overload_refusals, 2);

  // The admitted stream's next chunk still queues behind the held backend.
  ASSERT_TRUE(admitted->Push(Frames(3).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 7; }));
  EXPECT_EQ(daemon_->scheduler_stats().rejected_jobs, 0);
  gate_->SetOpen(true);
  ASSERT_TRUE(busy->Next().ok());
  for (int rows : {4, 3}) {
    absl::StatusOr<StreamAnswer> got = admitted->Next();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->scores.rows(), rows);
  }
  EXPECT_TRUE(admitted->Finish().ok());
  EXPECT_TRUE(busy->Finish().ok());
  // Caught up: new work is taken again.
  EXPECT_TRUE(client_->Score(request).ok());
}

// Unsent answers (issue 16): a chunk is charged its results' bytes when it is
// accepted (6 states and a frame total x 4 bytes = 28 per frame here) and stays charged until
// its answer is written; with the backend held nothing is written, so what
// is held is exact.
TEST_F(OpsLimitsTest, AnswerMemoryLimitsMakeChunksWaitOrRefuseThem) {
  DaemonOptions options;
  options.limits.max_stream_answer_bytes = 2800;  // 100 frames
  options.limits.max_answer_memory_bytes = 4200;  // 150 frames
  Start(options);
  const ScorerService& service = daemon_->service();
  std::unique_ptr<StreamSession> busy = OccupyBackend();  // 1 frame
  ASSERT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 28; }));

  // One chunk larger than a stream's share: refused, whatever is free.
  std::unique_ptr<StreamSession> big = OpenStream();
  ASSERT_TRUE(big->Push(Frames(101).view()).ok());
  absl::StatusOr<StreamAnswer> refused = big->Next();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("makes 2828 bytes of results, above this server's "
                                            "2800 bytes per stream (--stream_answer_memory_mb)"),
            std::string::npos)
      << refused.status();

  // a holds 80 frames, b 40; b's next 40 would take the server to 161
  // frames' worth, past 150: it waits, reading paused, while b's first
  // answer is still to be taken (that will free memory).
  std::unique_ptr<StreamSession> a = OpenStream();
  std::unique_ptr<StreamSession> b = OpenStream();
  ASSERT_TRUE(a->Push(Frames(40).view()).ok());
  ASSERT_TRUE(a->Push(Frames(40).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 28 * 81; }));
  ASSERT_TRUE(b->Push(Frames(40).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 28 * 121; }));
  ASSERT_TRUE(b->Push(Frames(40).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return service.answer_memory_waits() == 1; }));
  EXPECT_EQ(service.unsent_answer_bytes(), 28 * 121);
  EXPECT_EQ(service.answer_memory_refusals(), 0);

  // c has nothing of its own to wait for: its first chunk is refused.
  std::unique_ptr<StreamSession> c = OpenStream();
  ASSERT_TRUE(c->Push(Frames(40).view()).ok());
  absl::StatusOr<StreamAnswer> ended = c->Next();
  EXPECT_EQ(ended.status().code(), absl::StatusCode::kResourceExhausted) << ended.status();
  EXPECT_NE(ended.status().message().find("answers its clients have not yet taken, and the chunk "
                                          "at frame 0 would take it past its limit"),
            std::string::npos)
      << ended.status();
  EXPECT_NE(ended.status().message().find("--answer_memory_mb"), std::string::npos);
  EXPECT_EQ(service.answer_memory_refusals(), 1);

  // Once answers are taken, b's waiting chunk is accepted and answered.
  gate_->SetOpen(true);
  ASSERT_TRUE(busy->Next().ok());
  for (int c = 0; c < 2; ++c) EXPECT_TRUE(a->Next().ok()) << c;
  for (int first : {0, 40}) {
    absl::StatusOr<StreamAnswer> got = b->Next();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->first_frame, first);
    EXPECT_EQ(got->scores.rows(), 40);
  }
  EXPECT_TRUE(b->Finish().ok());
  EXPECT_EQ(service.answer_memory_waits(), 1);
  EXPECT_EQ(service.answer_memory_refusals(), 1);
  // Every answer written: nothing is held.
  EXPECT_TRUE(a->Finish().ok());
  EXPECT_TRUE(busy->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 0; }));
}

// A stream stops reading while it holds its share, and goes on once its
// answers are taken (back-pressure, not an error).
TEST_F(OpsLimitsTest, AStreamAtItsShareOfAnswerMemoryPausesReading) {
  DaemonOptions options;
  options.limits.max_stream_answer_bytes = 2800;  // 100 frames
  Start(options);
  const ScorerService& service = daemon_->service();
  gate_->SetOpen(false);
  std::unique_ptr<StreamSession> a = OpenStream();
  for (int c = 0; c < 4; ++c) ASSERT_TRUE(a->Push(Frames(60).view()).ok());
  // 60 frames held < 100: the second chunk is read; 120 >= 100: no third.
  ASSERT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 28 * 120; }));
  absl::SleepFor(absl::Milliseconds(200));  // a wrong third read would show here
  EXPECT_EQ(service.unsent_answer_bytes(), 28 * 120);
  gate_->SetOpen(true);
  for (int c = 0; c < 4; ++c) {
    absl::StatusOr<StreamAnswer> answer = a->Next();
    ASSERT_TRUE(answer.ok()) << c << ": " << answer.status();
    EXPECT_EQ(answer->first_frame, 60 * c);
  }
  EXPECT_TRUE(a->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 0; }));
}

TEST_F(OpsLimitsTest, CancelledStreamLeavesTheQueueUnscored) {
  Start({});
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  std::unique_ptr<StreamSession> leaving = OpenStream();
  for (int c = 0; c < 3; ++c) ASSERT_TRUE(leaving->Push(Frames(7).view()).ok());
  ASSERT_TRUE(WaitFor([&] { return QueuedFrames() == 21; }));
  ASSERT_EQ(daemon_->service().live_streams(), 2);
  leaving->Cancel();
  // The backend is still held: only the cancellation can empty the queue.
  EXPECT_TRUE(WaitFor([&] { return QueuedFrames() == 0; }));
  EXPECT_TRUE(WaitFor([&] { return daemon_->service().live_streams() == 1; }));
  EXPECT_EQ(daemon_->scheduler_stats().cancelled_jobs, 3);
  gate_->SetOpen(true);
  ASSERT_TRUE(busy->Next().ok());
  EXPECT_TRUE(busy->Finish().ok());
  EXPECT_EQ(gate_->calls(), 1);  // the cancelled chunks never reached the backend
}

TEST_F(OpsLimitsTest, RequestPastItsDeadlineIsDroppedUnscored) {
  Start({});
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  auto stub = v1::AcousticScorer::NewStub(client_->channel());
  v1::ScoreRequest request = UnaryRequest(9);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(300)));
  v1::ScoreResponse response;
  const grpc::Status status = stub->Score(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  // The server drops the job when the deadline passes, with the backend
  // still held: it is never scored.
  EXPECT_TRUE(WaitFor([&] { return QueuedFrames() == 0; }));
  const BatchSchedulerStats stats = daemon_->scheduler_stats();
  EXPECT_EQ(stats.expired_jobs + stats.cancelled_jobs, 1);
  gate_->SetOpen(true);
  ASSERT_TRUE(busy->Next().ok());
  EXPECT_TRUE(busy->Finish().ok());
  EXPECT_EQ(gate_->calls(), 1);
}

TEST_F(OpsLimitsTest, IdleStreamEndsWithDeadlineExceededAndALiveOneCarriesOn) {
  DaemonOptions options;
  options.limits.stream_idle_timeout = absl::Seconds(3);
  Start(options);
  std::unique_ptr<StreamSession> idle = OpenStream();
  ASSERT_TRUE(idle->Push(Frames(2).view()).ok());
  ASSERT_TRUE(idle->Next().ok());
  std::unique_ptr<StreamSession> live = OpenStream();
  // The live stream sends a chunk every 100 ms until the idle one, which
  // sends nothing after its first answer, has ended: each of its gaps is far
  // inside the timeout however slow the machine (a condition, not a window).
  absl::Status ended;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (int c = 0; ended.ok() && absl::Now() < give_up; ++c) {
    ASSERT_TRUE(live->Push(Frames(1).view()).ok()) << c;
    absl::StatusOr<StreamAnswer> got = live->Next();
    ASSERT_TRUE(got.ok()) << "chunk " << c << ": " << got.status();
    absl::StatusOr<std::optional<StreamAnswer>> idle_end = idle->TryNext();
    if (!idle_end.ok()) ended = idle_end.status();
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(ended.code(), absl::StatusCode::kDeadlineExceeded) << ended;
  EXPECT_NE(ended.message().find("idle"), std::string::npos) << ended;
  EXPECT_TRUE(live->Finish().ok());
  EXPECT_TRUE(WaitFor([&] { return daemon_->service().live_streams() == 0; }));
}

TEST_F(OpsLimitsTest, StreamWaitingForItsAnswersIsNotIdle) {
  DaemonOptions options;
  options.limits.stream_idle_timeout = absl::Milliseconds(300);
  Start(options);
  std::unique_ptr<StreamSession> busy = OccupyBackend();
  // The server, not the client, is slow: 1 s with the chunk unanswered.
  absl::SleepFor(absl::Seconds(1));
  gate_->SetOpen(true);
  absl::StatusOr<StreamAnswer> got = busy->Next();
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(busy->Finish().ok());
}

// What lets clients spread over replicas a scaler adds: an old connection
// is closed (GOAWAY, then the grace), the stream on it ends, and the same
// Client opens its next stream on a fresh connection.
TEST_F(OpsLimitsTest, ConnectionPastItsMaxAgeClosesAndTheClientReconnects) {
  DaemonOptions options;
  options.max_connection_age = absl::Seconds(1);
  options.max_connection_age_grace = absl::Seconds(1);
  const absl::Time before_connect = absl::Now();
  Start(options);
  std::unique_ptr<StreamSession> old = OpenStream();
  absl::Status ended;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  int answered = 0;
  while (ended.ok() && absl::Now() < give_up) {
    absl::Status pushed = old->Push(Frames(1).view());
    absl::StatusOr<StreamAnswer> got = pushed.ok() ? old->Next() : pushed;
    if (got.ok()) {
      ++answered;
    } else {
      ended = got.status();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_FALSE(ended.ok()) << "the stream outlived its connection's age for 60 s";
  // Age (1 s, gRPC's jitter at most 10%) plus grace (1 s) had to pass first.
  EXPECT_GE(absl::Now() - before_connect, absl::Milliseconds(1800)) << ended;
  EXPECT_GT(answered, 0);
  // The new connection ages too (1 s + 1 s): on a loaded machine a short
  // stream may meet that second GOAWAY, so it gets one more try.
  absl::Status streamed;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<StreamSession> next = OpenStream();
    streamed = next->Push(Frames(2).view());
    if (streamed.ok()) streamed = next->Next().status();
    if (streamed.ok()) streamed = next->Finish();
    if (streamed.ok()) break;
  }
  EXPECT_TRUE(streamed.ok()) << streamed;
}

TEST_F(OpsLimitsTest, MessageOverTheSizeLimitIsResourceExhausted) {
  DaemonOptions options;
  options.max_message_bytes = 64 << 10;
  Start(options);
  v1::ScoreRequest request = UnaryRequest(5000);  // 80 KB of floats
  absl::StatusOr<v1::ScoreResponse> response = client_->Score(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kResourceExhausted) << response.status();
  FeaturesToProto(Frames(10).view(), request.mutable_features());
  EXPECT_TRUE(client_->Score(request).ok());
}

}  // namespace
}  // namespace gmmscore
