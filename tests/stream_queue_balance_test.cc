// StreamScore calls spread over the daemon's completion queues however the
// connections fall. gRPC ties each connection to one queue and offers a new
// call to that queue's open requests first; without placement every stream
// of one connection (a load generator's channel, a decoder's) would land on
// one queue thread. CqStreamServer re-arms each request on the queue with
// the fewest calls, so a queue's share is bounded by the open requests.
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

constexpr int kQueues = 4;
constexpr int kStreams = 200;
// CqStreamServer keeps 4 requests open per queue's worth, placed where the
// calls are fewest: a queue can run ahead of the mean by 4 + 1, and trail it
// by as many as all of them.
constexpr int kOpenRequests = 4 * kQueues;

int64_t Sum(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{0});
}

// Waits (up to 10 s) until the daemon has accepted `calls` StreamScore calls.
bool WaitForCalls(const Daemon& daemon, int64_t calls) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Sum(daemon.stream_calls_per_queue()) != calls) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

struct OpenStream {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::StreamScoreRequest, v1::StreamScoreResponse>>
      stream;
};

TEST(StreamQueueBalanceTest, StreamsOfOneConnectionSpreadOverTheQueues) {
  DaemonOptions options;
  options.stream_threads = kQueues;
  std::unique_ptr<TestDaemon> daemon =
      TestDaemon::Start({{"m", {.num_states = 8, .dim = 13, .seed = 1}}}, options);
  ASSERT_NE(daemon, nullptr);
  ASSERT_EQ(daemon->daemon().stream_calls_per_queue(), std::vector<int64_t>(kQueues, 0));

  // One connection; each stream accepted before the next opens, so that
  // the connection's own queue always has a request open for it.
  auto stub = v1::AcousticScorer::NewStub(
      grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials()));
  std::vector<std::unique_ptr<OpenStream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<OpenStream>());
    streams.back()->stream = stub->StreamScore(&streams.back()->context);
    ASSERT_TRUE(WaitForCalls(daemon->daemon(), i + 1)) << "stream " << i << " not accepted";
  }

  const std::vector<int64_t> calls = daemon->daemon().stream_calls_per_queue();
  ASSERT_EQ(calls.size(), kQueues);
  for (int64_t queue_calls : calls) {
    EXPECT_GE(queue_calls, kStreams / kQueues - kOpenRequests) << absl::StrJoin(calls, " ");
    EXPECT_LE(queue_calls, kStreams / kQueues + 4 + 1) << absl::StrJoin(calls, " ");
  }

  for (auto& open : streams) open->context.TryCancel();
  for (auto& open : streams) EXPECT_EQ(open->stream->Finish().error_code(), grpc::CANCELLED);
  streams.clear();
  EXPECT_TRUE(daemon->WaitUntilIdle(absl::Seconds(10)));
  EXPECT_TRUE(WaitForCalls(daemon->daemon(), 0)) << "calls still counted after they ended";
  EXPECT_EQ(daemon->daemon().stream_calls_per_queue(), std::vector<int64_t>(kQueues, 0));
}

}  // namespace
}  // namespace gmmscore
