// The daemon under attack (issue 16), on the test backend: clients that never
// read their answers, requests whose answers could never be sent, bytes that
// are not messages, client strings built to forge log lines or overflow
// metadata, feature values whose squares overflow, health names anyone could
// flip, and an admin service left open beside a scoring token. Beside every
// attack a control stream scores real frames and must get every chunk
// answered correctly.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_callback.h"
#include "gtest/gtest.h"
#include "kernels/core/feature_values.h"
#include "proto/wire_convert.h"
#include "server/log.h"
#include "tests/ops_test_util.h"
#include "tests/test_daemon.h"

extern char** environ;

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr int kDim = 13;
// A model whose dense answers are large (500 states: 2 MB a 1000-frame chunk)
// and cheap to score (one Gaussian a state).
constexpr SyntheticModelSpec kWide{.num_states = 500, .min_gaussians = 1, .max_gaussians = 1,
                                   .dim = kDim, .seed = 11};
constexpr SyntheticModelSpec kSmall{.num_states = 10, .min_gaussians = 1, .max_gaussians = 2,
                                    .dim = kDim, .seed = 12};

// Polls `done` for up to 60 s (the machine may be loaded, or sanitized).
bool WaitFor(const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// This process's resident memory, bytes.
int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      std::string number = line.substr(6);
      number.erase(0, number.find_first_not_of(" \t"));
      number = number.substr(0, number.find(' '));
      if (absl::SimpleAtoi(number, &kib)) return kib * 1024;
    }
  }
  return -1;
}

// A stream that scores real frames and checks every answer against the
// offline engine, on a thread of its own, until Stop().
class ControlStream {
 public:
  ControlStream(TestDaemon* daemon, const std::string& model) : daemon_(daemon), model_(model) {
    thread_ = std::thread([this] { Run(); });
  }
  // Joins; returns the chunks answered correctly, or fails the test.
  int Stop() {
    stop_.Notify();
    thread_.join();
    EXPECT_TRUE(status_.ok()) << "control stream: " << status_;
    EXPECT_GT(answered_, 0);
    return answered_;
  }

 private:
  void Run() {
    std::unique_ptr<Client> client = daemon_->NewClient();
    v1::StreamConfig config;
    config.add_models(model_);
    config.set_stream_id("control");
    absl::StatusOr<std::unique_ptr<StreamSession>> stream = client->StartStream(config);
    if (!stream.ok()) {
      status_ = stream.status();
      return;
    }
    const DiagGmmModel& model = daemon_->model(model_);
    for (int chunk = 0; !stop_.HasBeenNotified() || chunk < 3; ++chunk) {
      const FloatMatrix frames = TestFeatures(model, 8, 100 + chunk);
      const FloatMatrix offline = daemon_->ScoreOffline(model_, frames.view());
      const FloatMatrix allowance = ScoreAllowance(model, frames.view());
      status_ = (*stream)->Push(frames.view());
      if (!status_.ok()) return;
      absl::StatusOr<StreamAnswer> answer = (*stream)->Next();
      if (!answer.ok()) {
        status_ = answer.status();
        return;
      }
      for (int64_t t = 0; t < frames.rows(); ++t) {
        for (int s = 0; s < model.num_states(); ++s) {
          if (!(std::abs(answer->scores.at(t, s) - offline.at(t, s)) <= allowance.at(t, s))) {
            status_ = absl::InternalError(absl::StrCat("chunk ", chunk, " frame ", t, " state ",
                                                       s, " differs from the offline engine"));
            return;
          }
        }
      }
      ++answered_;
    }
    status_ = (*stream)->Finish();
  }

  TestDaemon* const daemon_;
  const std::string model_;
  absl::Notification stop_;
  absl::Status status_;
  int answered_ = 0;
  std::thread thread_;
};

v1::StreamScoreRequest ConfigRequest(const std::string& model, const std::string& id = "") {
  v1::StreamScoreRequest request;
  request.mutable_config()->add_models(model);
  request.mutable_config()->set_stream_id(id);
  return request;
}

v1::StreamScoreRequest ChunkRequest(const DiagGmmModel& model, int frames, uint64_t seed) {
  v1::StreamScoreRequest request;
  const FloatMatrix features = TestFeatures(model, frames, seed);
  FeaturesToProto(features.view(), request.mutable_chunk());
  return request;
}

std::unique_ptr<v1::AcousticScorer::Stub> Stub(const std::string& address) {
  return v1::AcousticScorer::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

// ---------------------------------------------------------------------------
// Clients that never read: memory stays bounded, the streams are cancelled
// after the write timeout and everything they held is freed.

// Starts tests/non_reading_clients_main.cc: `streams` streams, each on a
// connection of its own, writing up to `chunks` chunks of `frames` frames
// and never reading. Returns its pid once every stream has started.
pid_t StartNonReadingClients(const std::string& address, int dim, int streams, int frames,
                             int chunks) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  const std::vector<std::string> args = {GMMSCORE_NON_READING_CLIENTS, address, "wide",
                                         std::to_string(dim), std::to_string(streams),
                                         std::to_string(frames), std::to_string(chunks)};
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned =
      posix_spawn(&pid, GMMSCORE_NON_READING_CLIENTS, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  char line[64] = {};
  const ssize_t got = spawned == 0 ? read(pipe_fds[0], line, sizeof(line) - 1) : -1;
  close(pipe_fds[0]);
  if (spawned != 0 || got <= 0 || std::string(line).rfind("started", 0) != 0) return -1;
  return pid;
}

class SlowReaderTest : public ::testing::TestWithParam<StreamApi> {};

TEST_P(SlowReaderTest, ClientsThatNeverReadHoldBoundedMemoryAndAreCancelled) {
  constexpr int kAttackers = 24;
  constexpr int64_t kStreamBudget = int64_t{2} << 20;
  DaemonOptions options;
  options.stream_api = GetParam();
  options.limits.max_stream_answer_bytes = kStreamBudget;
  options.limits.max_answer_memory_bytes = int64_t{512} << 20;
  options.limits.stream_write_timeout = absl::Seconds(2);
  auto daemon = TestDaemon::Start({{"wide", kWide}}, options);
  ASSERT_NE(daemon, nullptr);
  const ScorerService& service = daemon->daemon().service();
  const int64_t chunk_bytes = int64_t{1000} * (kWide.num_states + 1) * 4;  // 2 MB, with totals
  ControlStream control(daemon.get(), "wide");
  ASSERT_TRUE(WaitFor([&] { return service.live_streams() == 1; }));
  const int64_t rss_before = ResidentBytes();

  const pid_t attackers =
      StartNonReadingClients(daemon->address(), kDim, kAttackers, 1000, 40);
  ASSERT_GT(attackers, 0);
  // While they sit, the server's unsent answers stay within each stream's
  // share (its budget, plus the one chunk read when it was just under it),
  // until the write timeout cancels them, leaving the control stream alone.
  int64_t most_unsent = 0, most_rss = rss_before;
  auto sample = [&] {
    most_unsent = std::max(most_unsent, service.unsent_answer_bytes());
    most_rss = std::max(most_rss, ResidentBytes());
  };
  const bool arrived = WaitFor([&] {
    sample();
    return service.live_streams() == kAttackers + 1;
  });
  const bool cancelled = WaitFor([&] {
    sample();
    return service.live_streams() == 1;
  });
  kill(attackers, SIGKILL);
  waitpid(attackers, nullptr, 0);
  EXPECT_TRUE(arrived);
  EXPECT_TRUE(cancelled) << "clients that never read were not cancelled by the write timeout";
  EXPECT_EQ(service.stalled_streams(), kAttackers);
  EXPECT_GT(most_unsent, 0);
  EXPECT_LE(most_unsent, kAttackers * (kStreamBudget + chunk_bytes) + chunk_bytes);
  // Without the bound each attacker held 8 answered chunks and one being
  // written (~20 MB, ~480 MB in all), for as long as it stayed connected.
  const int64_t grown = most_rss - rss_before;
  std::printf("unsent answers at most %.1f MiB, RSS grew by at most %.1f MiB (%d attackers)\n",
              most_unsent / 1048576.0, grown / 1048576.0, kAttackers);
#if !defined(__SANITIZE_ADDRESS__)
  // (Under AddressSanitizer RSS is its allocator's: freed blocks wait in a
  // 256 MiB quarantine and every block has redzones. The accounting bound
  // above holds there too.)
  EXPECT_LT(grown, int64_t{kAttackers} * (12 << 20));
#endif
  // Everything they held is freed; the control stream never noticed.
  EXPECT_TRUE(WaitFor([&] { return service.unsent_answer_bytes() == 0; }));
  EXPECT_GT(control.Stop(), 0);
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(30)));
}

std::string ApiName(const ::testing::TestParamInfo<StreamApi>& info) {
  return info.param == StreamApi::kCallback ? "callback" : "cq";
}

INSTANTIATE_TEST_SUITE_P(BothStreamApis, SlowReaderTest,
                         ::testing::Values(StreamApi::kCompletionQueue, StreamApi::kCallback),
                         ApiName);

// ---------------------------------------------------------------------------
// Score: an answer that could not be sent is refused before any work.

TEST(AdversarialTest, ScoreAnswersLargerThanTheMessageLimitAreRefusedBeforeAnyWork) {
  DaemonOptions options;
  options.max_message_bytes = 4 << 20;
  auto daemon = TestDaemon::Start({{"wide", kWide}, {"wide2", kWide}}, options);
  ASSERT_NE(daemon, nullptr);
  auto stub = Stub(daemon->address());
  // 1500 frames x 500 states x (2 models + fused) x 4 bytes = 9 MB > 4 MiB,
  // though the request itself is 78 KB.
  v1::ScoreRequest request;
  request.add_models("wide");
  request.add_models("wide2");
  FeaturesToProto(TestFeatures(daemon->model("wide"), 1500, 3).view(), request.mutable_features());
  for (int round = 0; round < 20; ++round) {
    grpc::ClientContext context;
    v1::ScoreResponse response;
    const grpc::Status status = stub->Score(&context, request, &response);
    ASSERT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_THAT(status.error_message(),
                HasSubstr("1500 frames x 500 states x 3 score sets would be 8.6 MiB, above this "
                          "server's message limit of 4.0 MiB"));
  }
  // Nothing reached the scheduler.
  EXPECT_EQ(daemon->daemon().scheduler_stats().jobs, 0);
  EXPECT_EQ(daemon->daemon().scheduler_stats().frames, 0);
  ControlStream control(daemon.get(), "wide");
  // A request that fits is scored.
  request.mutable_features()->Clear();
  FeaturesToProto(TestFeatures(daemon->model("wide"), 100, 4).view(), request.mutable_features());
  grpc::ClientContext context;
  v1::ScoreResponse response;
  EXPECT_TRUE(stub->Score(&context, request, &response).ok());
  EXPECT_GT(control.Stop(), 0);
}

// ---------------------------------------------------------------------------
// Bytes that are not messages: INVALID_ARGUMENT, on both stream APIs and on
// Score, never OK with the rest silently dropped.

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer Serialized(const google::protobuf::Message& message) {
  return Bytes(message.SerializeAsString());
}

// A varint field 1 whose value never ends: no protobuf parser accepts it.
const char kUndecodable[] = "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";

// Writes `messages` raw on StreamScore, half-closes, reads to the end.
grpc::Status RawStream(const std::string& address, const std::vector<grpc::ByteBuffer>& messages,
                       int* answers) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto call = stub.PrepareCall(&context, "/gmmscore.v1.AcousticScorer/StreamScore", &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  if (!cq.Next(&tag, &ok) || !ok) return grpc::Status(grpc::StatusCode::INTERNAL, "no call");
  for (const grpc::ByteBuffer& message : messages) {
    call->Write(message, reinterpret_cast<void*>(2));
    if (!cq.Next(&tag, &ok) || !ok) break;
  }
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  *answers = 0;
  while (true) {
    grpc::ByteBuffer reply;
    call->Read(&reply, reinterpret_cast<void*>(4));
    if (!cq.Next(&tag, &ok) || !ok) break;
    ++*answers;
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  return status;
}

class UndecodableTest : public ::testing::TestWithParam<StreamApi> {};

TEST_P(UndecodableTest, AnUndecodableStreamMessageEndsTheStreamWithInvalidArgument) {
  DaemonOptions options;
  options.stream_api = GetParam();
  auto daemon = TestDaemon::Start({{"small", kSmall}}, options);
  ASSERT_NE(daemon, nullptr);
  ControlStream control(daemon.get(), "small");
  const DiagGmmModel& model = daemon->model("small");
  int answers = -1;
  const grpc::Status status =
      RawStream(daemon->address(),
                {Serialized(ConfigRequest("small")), Serialized(ChunkRequest(model, 5, 1)),
                 Bytes(std::string(kUndecodable, sizeof(kUndecodable) - 1)),
                 Serialized(ChunkRequest(model, 5, 2))},
                &answers);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(),
              HasSubstr("a message of 12 bytes is not a valid gmmscore.v1.StreamScoreRequest"));
  EXPECT_EQ(answers, 1);  // the chunk before it
  EXPECT_GT(control.Stop(), 0);
}

INSTANTIATE_TEST_SUITE_P(BothStreamApis, UndecodableTest,
                         ::testing::Values(StreamApi::kCompletionQueue, StreamApi::kCallback),
                         ApiName);

TEST(AdversarialTest, AnUndecodableScoreRequestIsInvalidArgument) {
  auto daemon = TestDaemon::Start({{"small", kSmall}});
  ASSERT_NE(daemon, nullptr);
  auto channel = grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::ByteBuffer request = Bytes(std::string(kUndecodable, sizeof(kUndecodable) - 1));
  auto call = stub.PrepareUnaryCall(&context, "/gmmscore.v1.AcousticScorer/Score", request, &cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("is not a valid gmmscore.v1.ScoreRequest"));
}

// ---------------------------------------------------------------------------
// Client strings: escaped and cut wherever they are logged or echoed.

absl::Mutex log_mu;
std::vector<std::string>* log_lines = nullptr;

void KeepLine(LogLevel, absl::string_view message) {
  absl::MutexLock lock(&log_mu);
  if (log_lines != nullptr) log_lines->emplace_back(message);
}

TEST(AdversarialTest, ClientStringsCannotForgeLogLinesOrOverflowMetadata) {
  std::vector<std::string> lines;
  {
    absl::MutexLock lock(&log_mu);
    log_lines = &lines;
  }
  SetLogObserver(&KeepLine);
  auto daemon = TestDaemon::Start({{"small", kSmall}});
  ASSERT_NE(daemon, nullptr);
  ControlStream control(daemon.get(), "small");
  auto stub = Stub(daemon->address());
  // A 1 MiB model name: NOT_FOUND (not RESOURCE_EXHAUSTED from an echoed
  // name overflowing the client's metadata limit), its message short.
  {
    v1::ScoreRequest request;
    request.add_models(std::string(1 << 20, 'n'));
    FeaturesToProto(TestFeatures(daemon->model("small"), 2, 1).view(), request.mutable_features());
    grpc::ClientContext context;
    v1::ScoreResponse response;
    const grpc::Status status = stub->Score(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_LT(status.error_message().size(), 400u);
    EXPECT_THAT(status.error_message(), HasSubstr("...(1048576 bytes)"));
  }
  // A stream id with newlines, and a 10 MB one, ended by a bad chunk (which
  // logs the id): one line each, cut.
  const std::string forged = "x\nE1124 00:00:00.000000 gmmscored] forged line";
  for (const std::string& id : {forged, std::string(10 << 20, 'i')}) {
    grpc::ClientContext context;
    auto stream = stub->StreamScore(&context);
    ASSERT_TRUE(stream->Write(ConfigRequest("small", id)));
    v1::StreamScoreRequest bad = ChunkRequest(daemon->model("small"), 2, 3);
    bad.mutable_chunk()->set_values(1, NAN);
    ASSERT_TRUE(stream->Write(bad));
    stream->WritesDone();
    v1::StreamScoreResponse response;
    while (stream->Read(&response)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_GT(control.Stop(), 0);
  daemon.reset();
  SetLogObserver(nullptr);
  absl::MutexLock lock(&log_mu);
  log_lines = nullptr;
  bool saw_forged_id = false, saw_cut_id = false;
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line.substr(0, 200);
    EXPECT_LT(line.size(), 2000u) << line.substr(0, 200);
    saw_forged_id |= line.find("x\\nE1124 00:00:00.000000 gmmscored] forged") != std::string::npos;
    saw_cut_id |= line.find("...(10485760 bytes)") != std::string::npos;
  }
  EXPECT_TRUE(saw_forged_id);
  EXPECT_TRUE(saw_cut_id);
}

// ---------------------------------------------------------------------------
// Features: one definition of a usable value, on streams and Score alike.

TEST(AdversarialTest, FeaturesWhoseSquaresOverflowAreRefusedNotAnsweredWithNan) {
  auto daemon = TestDaemon::Start({{"small", kSmall}});
  ASSERT_NE(daemon, nullptr);
  auto stub = Stub(daemon->address());
  v1::ScoreRequest request;
  request.add_models("small");
  FloatMatrix features = TestFeatures(daemon->model("small"), 3, 1);
  features.at(2, 4) = 3e38f;
  FeaturesToProto(features.view(), request.mutable_features());
  grpc::ClientContext context;
  v1::ScoreResponse response;
  const grpc::Status status = stub->Score(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("dimension 4 is 3e+38"));
  EXPECT_THAT(status.error_message(), HasSubstr(kFeatureValueRule));

  grpc::ClientContext stream_context;
  auto stream = stub->StreamScore(&stream_context);
  ASSERT_TRUE(stream->Write(ConfigRequest("small")));
  v1::StreamScoreRequest chunk;
  FeaturesToProto(features.view(), chunk.mutable_chunk());
  ASSERT_TRUE(stream->Write(chunk));
  stream->WritesDone();
  v1::StreamScoreResponse answer;
  EXPECT_FALSE(stream->Read(&answer));
  const grpc::Status stream_status = stream->Finish();
  EXPECT_EQ(stream_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(stream_status.error_message(), HasSubstr(kFeatureValueRule));
}

// ---------------------------------------------------------------------------
// Health: only successful loads change it; nobody can flip the overall or
// scorer status; a drain never shows the overall NOT_SERVING while a model
// still reads SERVING.

TEST(AdversarialTest, FailedLoadsCannotFlipHealthOrLeaveEntriesBehind) {
  auto served = DirectoryDaemon::Start({{"a", kSmall}}, {});
  ASSERT_NE(served, nullptr);
  const std::string& address = served->daemon->address();
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  EXPECT_EQ(AdminLoad(channel, "").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdminLoad(channel, "gmmscore.v1.AcousticScorer").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdminLoad(channel, "missing").error_code(), grpc::StatusCode::NOT_FOUND);
  const grpc::Status huge = AdminLoad(channel, std::string(1 << 20, 'h'));
  EXPECT_EQ(huge.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(huge.error_message().size(), 400u);
  EXPECT_EQ(CheckHealth(address, ""), "SERVING");
  EXPECT_EQ(CheckHealth(address, "gmmscore.v1.AcousticScorer"), "SERVING");
  EXPECT_EQ(CheckHealth(address, "a"), "SERVING");
  EXPECT_EQ(CheckHealth(address, "missing"), "rpc:NOT_FOUND");
  EXPECT_EQ(CheckHealth(address, std::string(1 << 20, 'h')).rfind("rpc:", 0), 0u);
  // The failed load of a served name leaves it serving its version.
  served->WriteModel("a", kSmall);
  std::ofstream(served->directory + "/a.gmm", std::ios::trunc) << "not a model";
  EXPECT_FALSE(AdminLoad(channel, "a").ok());
  EXPECT_EQ(CheckHealth(address, "a"), "SERVING");
}

TEST(AdversarialTest, DrainNeverShowsTheOverallStatusAheadOfAModel) {
  for (int round = 0; round < 3; ++round) {
    DaemonOptions options;
    options.ops.drain_grace = absl::Seconds(2);
    auto served = DirectoryDaemon::Start({{"a", kSmall}, {"b", kSmall}}, options);
    ASSERT_NE(served, nullptr);
    const std::string address = served->daemon->address();
    std::thread drainer([&] { served->daemon->Drain(absl::Seconds(10)); });
    // Read the overall status, then each model's: once the overall status
    // says NOT_SERVING, every model read after it must too.
    bool overall_down = false;
    while (!overall_down) {
      const std::string overall = CheckHealth(address, "");
      if (overall.rfind("rpc:", 0) == 0) break;  // the grace ended first
      overall_down = overall == "NOT_SERVING";
      const std::string a = CheckHealth(address, "a");
      const std::string b = CheckHealth(address, "b");
      if (overall_down) {
        EXPECT_NE(a, "SERVING") << "round " << round;
        EXPECT_NE(b, "SERVING") << "round " << round;
      }
    }
    EXPECT_TRUE(overall_down) << "round " << round << ": the 2 s grace passed unseen";
    drainer.join();
  }
}

// ---------------------------------------------------------------------------
// ModelAdmin: closed when only a scoring token is set, unless opened.

TEST(AdversarialTest, AdminIsClosedWhenOnlyAScoringTokenIsSet) {
  for (const bool admin_open : {false, true}) {
    DaemonOptions options;
    options.limits.required_token = "scoring-token-0123456789";
    options.ops.admin_open = admin_open;
    auto served = DirectoryDaemon::Start({{"a", kSmall}, {"b", kSmall}}, options);
    ASSERT_NE(served, nullptr);
    auto channel =
        grpc::CreateChannel(served->daemon->address(), grpc::InsecureChannelCredentials());
    const grpc::Status unload = AdminUnload(channel, "b");
    const grpc::Status with_scoring_token =
        AdminUnload(channel, "b", "scoring-token-0123456789");
    if (admin_open) {
      EXPECT_TRUE(unload.ok()) << unload.error_message();
    } else {
      EXPECT_EQ(unload.error_code(), grpc::StatusCode::PERMISSION_DENIED);
      EXPECT_THAT(unload.error_message(), HasSubstr("--admin_token_file"));
      EXPECT_EQ(with_scoring_token.error_code(), grpc::StatusCode::PERMISSION_DENIED);
      EXPECT_EQ(served->daemon->repository().models().size(), 2u);
    }
  }
  EXPECT_EQ(DecideAdminAccess("", false, false).mode, AdminAccess::Mode::kOpen);
  EXPECT_FALSE(DecideAdminAccess("", false, false).warning.empty());
  EXPECT_EQ(DecideAdminAccess("", true, false).mode, AdminAccess::Mode::kClosed);
  EXPECT_EQ(DecideAdminAccess("t", true, false).mode, AdminAccess::Mode::kToken);
  EXPECT_TRUE(DecideAdminAccess("t", false, false).warning.empty());
}

}  // namespace
}  // namespace gmmscore
