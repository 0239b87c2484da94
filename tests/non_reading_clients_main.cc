// Clients that stream chunks and never read an answer, each on a connection
// of its own (as separate careless or hostile clients would be): the slow-
// reader attack of issue 16, from a process apart from the daemon so that
// the daemon's memory can be measured alone.
//
//   non_reading_clients HOST:PORT MODEL DIM STREAMS CHUNK_FRAMES CHUNKS
//
// Prints "started N" once a thread per stream runs, then writes up to CHUNKS
// chunks of CHUNK_FRAMES frames on each (a write blocks while the daemon does
// not read). Prints "ended K" every second: the streams whose writes the
// daemon failed (it ended them). Runs until it is killed.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace {

using gmmscore::v1::StreamScoreRequest;
using gmmscore::v1::StreamScoreResponse;

// One stream on a thread of its own (a blocking Write is how the daemon's
// pause reaches this client): the config, then chunks until `chunks` are
// written or a write fails because the daemon ended the stream. A stream
// that could not connect at all (UNAVAILABLE before its config was taken,
// seen on a loaded 2-core machine) is tried again on a fresh connection, so
// that every attacker does arrive.
void RunStream(const std::string& address, int index, const StreamScoreRequest& config,
               const StreamScoreRequest& chunk, int chunks, std::atomic<int>* ended) {
  constexpr int kConnectAttempts = 5;
  for (int attempt = 0; attempt < kConnectAttempts; ++attempt) {
    grpc::ChannelArguments args;
    args.SetInt("gmmscore.test.connection", index * kConnectAttempts + attempt);  // a connection of its own
    auto stub = gmmscore::v1::AcousticScorer::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    auto context = std::make_unique<grpc::ClientContext>();
    auto stream = stub->StreamScore(context.get());
    bool open = stream->Write(config);
    const bool connected = open;
    for (int c = 0; open && c < chunks; ++c) open = stream->Write(chunk);
    if (!open) {
      const grpc::Status status = stream->Finish();
      if (!connected && status.error_code() == grpc::StatusCode::UNAVAILABLE && attempt + 1 < kConnectAttempts) {
        std::fprintf(stderr, "stream %d could not connect (%s): trying again\n", index, status.error_message().c_str());
        usleep(200 * 1000);
        continue;
      }
      std::fprintf(stderr, "stream %d ended: %d %s\n", index, status.error_code(), status.error_message().c_str());
      ended->fetch_add(1);
    }
    // Never reads: the answers stay unread until the process is killed.
    while (true) pause();
  }
}

}  // namespace

int main(int argc, char** argv) {
  int dim = 0, streams = 0, frames = 0, chunks = 0;
  if (argc != 7 || !absl::SimpleAtoi(argv[3], &dim) || !absl::SimpleAtoi(argv[4], &streams) ||
      !absl::SimpleAtoi(argv[5], &frames) || !absl::SimpleAtoi(argv[6], &chunks) || dim < 1 ||
      streams < 1 || frames < 1 || chunks < 0) {
    std::fprintf(stderr, "usage: %s HOST:PORT MODEL DIM STREAMS CHUNK_FRAMES CHUNKS\n", argv[0]);
    return 2;
  }
  // The test that starts this closes its end of stdout after "started": the
  // reports after it must not kill the attack (the daemon must end it).
  signal(SIGPIPE, SIG_IGN);
  StreamScoreRequest config;
  config.mutable_config()->add_models(argv[2]);
  StreamScoreRequest chunk;
  chunk.mutable_chunk()->set_num_frames(frames);
  chunk.mutable_chunk()->set_dim(dim);
  for (int64_t i = 0; i < int64_t{frames} * dim; ++i) {
    chunk.mutable_chunk()->add_values(0.1f * static_cast<float>(i % 17) - 0.8f);
  }
  std::atomic<int> ended{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back(RunStream, std::string(argv[1]), s, std::cref(config), std::cref(chunk),
                         chunks, &ended);
  }
  std::printf("started %d\n", streams);
  std::fflush(stdout);
  // Reports, once a second, how many streams the daemon has ended (a write
  // failed); runs until killed.
  while (true) {
    sleep(1);
    std::printf("ended %d\n", ended.load());
    std::fflush(stdout);
  }
}
