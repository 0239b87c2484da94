// Hundreds of clients that cancel or vanish mid-stream, in every way a
// client can, with one model or two fused by posterior: the daemon frees everything they held (no live stream, no
// stream session, no queued job afterwards; LeakSanitizer checks the memory
// in the GMMSCORE_SANITIZE=ON build) and keeps serving.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/wire_convert.h"
#include "tests/test_daemon.h"

extern char** environ;

namespace gmmscore {
namespace {

constexpr int kDim = 20;
constexpr int kClients = 400;
constexpr int kThreads = 16;
constexpr int kVanishingProcesses = 8;

class CancellationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A slow-ish model and a small batch keep jobs queued while clients leave.
    DaemonOptions options;
    options.scheduler.max_batch_frames = 256;
    options.limits.max_chunks_in_flight = 4;
    daemon_ = TestDaemon::Start({{"m", {.num_states = 200, .min_gaussians = 8,
                                        .max_gaussians = 16, .dim = kDim, .seed = 3}},
                                 {"n", {.num_states = 200, .min_gaussians = 8,
                                        .max_gaussians = 16, .dim = kDim, .seed = 4}}},
                                options);
    ASSERT_NE(daemon_, nullptr);
    features_ = TestFeatures(daemon_->model("m"), 40, 4);
  }

  v1::StreamConfig Config() const {
    v1::StreamConfig config;
    config.add_models("m");
    return config;
  }

  // Client i's stream: every other group of six (one of each way of
  // leaving) fuses two models by posterior, whose chunks wait their turn in
  // the session (held) while an earlier one is scored.
  v1::StreamConfig Config(int i) const {
    v1::StreamConfig config = Config();
    if ((i / 6) % 2 == 1) {
      config.add_models("n");
      config.mutable_fusion()->set_method(v1::FUSION_METHOD_POSTERIOR);
    }
    return config;
  }

  // One client leaving in the way `i` selects; true if it behaved.
  bool RunLeavingClient(int i, Client& shared) {
    switch (i % 6) {
      case 0: {  // cancels right after pushing
        auto session = shared.StartStream(Config(i));
        for (int k = 0; k < 4; ++k) (*session)->Push(features_.view().Rows(k * 10, 10)).IgnoreError();
        (*session)->Cancel();
        absl::Status end = (*session)->Finish();
        return end.code() == absl::StatusCode::kCancelled || end.ok();
      }
      case 1: {  // reads one answer, then drops the session (its destructor cancels)
        auto session = shared.StartStream(Config(i));
        for (int k = 0; k < 4; ++k) (*session)->Push(features_.view().Rows(k * 10, 10)).IgnoreError();
        return (*session)->Next().ok();
      }
      case 2: {  // its own connection, dropped with the stream open
        std::unique_ptr<Client> own = daemon_->NewClient();
        auto session = own->StartStream(Config(i));
        (*session)->Push(features_.view()).IgnoreError();
        own.reset();
        return true;  // the session goes out of scope mid-stream
      }
      case 3: {  // half-closes, then cancels while answers are pending
        auto session = shared.StartStream(Config(i));
        for (int k = 0; k < 4; ++k) (*session)->Push(features_.view().Rows(k * 10, 10)).IgnoreError();
        (*session)->CloseSend().IgnoreError();
        (*session)->Cancel();
        return true;
      }
      case 4: {  // raw stream cancelled before the config is even read
        auto stub = v1::AcousticScorer::NewStub(shared.channel());
        grpc::ClientContext context;
        auto stream = stub->StreamScore(&context);
        v1::StreamScoreRequest request;
        *request.mutable_config() = Config(i);
        stream->Write(request);
        FeaturesToProto(features_.view(), request.mutable_chunk());
        stream->Write(request);
        context.TryCancel();
        return !stream->Finish().ok();
      }
      default: {  // a deadline that expires mid-stream
        auto stub = v1::AcousticScorer::NewStub(shared.channel());
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(5));
        auto stream = stub->StreamScore(&context);
        v1::StreamScoreRequest request;
        *request.mutable_config() = Config(i);
        stream->Write(request);
        FeaturesToProto(features_.view().Rows(0, 10), request.mutable_chunk());
        while (stream->Write(request)) {
        }
        return !stream->Finish().ok();
      }
    }
  }

  std::unique_ptr<TestDaemon> daemon_;
  FloatMatrix features_;
};

TEST_F(CancellationTest, HundredsOfLeavingClientsFreeEverythingTheyHeld) {
  std::vector<std::unique_ptr<Client>> shared;
  for (int t = 0; t < kThreads; ++t) shared.push_back(daemon_->NewClient());
  std::atomic<int> misbehaved{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kClients; i += kThreads) {
        if (!RunLeavingClient(i, *shared[t])) ++misbehaved;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(misbehaved.load(), 0);
  shared.clear();

  EXPECT_TRUE(daemon_->WaitUntilIdle(absl::Seconds(30)))
      << daemon_->daemon().service().live_streams() << " streams and "
      << daemon_->daemon().service().sessions_alive() << " sessions left";

  // Still serving.
  std::unique_ptr<Client> client = daemon_->NewClient();
  auto session = client->StartStream(Config());
  ASSERT_TRUE((*session)->Push(features_.view()).ok());
  absl::StatusOr<StreamAnswer> answer = (*session)->Next();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->scores.rows(), 40);
  EXPECT_TRUE((*session)->Finish().ok());
}

TEST_F(CancellationTest, KilledClientProcessesFreeEverythingTheyHeld) {
  std::vector<pid_t> children;
  std::vector<FILE*> outputs;
  for (int i = 0; i < kVanishingProcesses; ++i) {
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    const std::string address = daemon_->address();
    const std::string dim = absl::StrCat(kDim);
    char* argv[] = {const_cast<char*>(GMMSCORE_VANISHING_CLIENT), const_cast<char*>(address.c_str()),
                    const_cast<char*>("m"), const_cast<char*>(dim.c_str()), nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, GMMSCORE_VANISHING_CLIENT, &actions, nullptr, argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    children.push_back(pid);
    outputs.push_back(fdopen(pipe_fds[0], "r"));
  }
  // Every child is mid-stream once it printed "streaming".
  for (FILE* out : outputs) {
    char line[64] = {};
    EXPECT_NE(fgets(line, sizeof(line), out), nullptr);
    EXPECT_STREQ(line, "streaming\n");
    fclose(out);
  }
  EXPECT_EQ(daemon_->daemon().service().live_streams(), kVanishingProcesses);
  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);

  EXPECT_TRUE(daemon_->WaitUntilIdle(absl::Seconds(30)))
      << daemon_->daemon().service().live_streams() << " streams and "
      << daemon_->daemon().service().sessions_alive() << " sessions left";
}

}  // namespace
}  // namespace gmmscore
