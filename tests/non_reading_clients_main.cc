// Clients that stream chunks and never read an answer, each on a connection
// of its own (as separate careless or hostile clients would be): the slow-
// reader attack of issue 16, from a process apart from the daemon so that
// the daemon's memory can be measured alone.
//
//   non_reading_clients HOST:PORT MODEL DIM STREAMS CHUNK_FRAMES CHUNKS
//
// Prints "started N" once every stream has written its config, then writes
// up to CHUNKS chunks of CHUNK_FRAMES frames on each (a write blocks when the
// daemon stops reading). Prints "ended N <code counts>" once the daemon has
// ended every stream (its status seen or the call failed), or runs until it
// is killed.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_callback.h"

namespace {

using gmmscore::v1::StreamScoreRequest;
using gmmscore::v1::StreamScoreResponse;

class NonReader : public grpc::ClientBidiReactor<StreamScoreRequest, StreamScoreResponse> {
 public:
  NonReader(gmmscore::v1::AcousticScorer::Stub* stub, const StreamScoreRequest& config,
            const StreamScoreRequest* chunk, int chunks, std::atomic<int>* ended,
            absl::Mutex* mu, std::map<int, int>* codes)
      : chunk_(chunk), chunks_(chunks), ended_(ended), mu_(mu), codes_(codes) {
    request_ = config;
    stub->async()->StreamScore(&context_, this);
    StartWrite(&request_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (!ok || sent_ == chunks_) return;
    ++sent_;
    StartWrite(chunk_);
  }
  void OnDone(const grpc::Status& status) override {
    {
      absl::MutexLock lock(mu_);
      ++(*codes_)[status.error_code()];
    }
    ended_->fetch_add(1);
  }

 private:
  grpc::ClientContext context_;
  StreamScoreRequest request_;
  const StreamScoreRequest* const chunk_;
  const int chunks_;
  int sent_ = 0;
  std::atomic<int>* const ended_;
  absl::Mutex* const mu_;
  std::map<int, int>* const codes_;
};

}  // namespace

int main(int argc, char** argv) {
  int dim = 0, streams = 0, frames = 0, chunks = 0;
  if (argc != 7 || !absl::SimpleAtoi(argv[3], &dim) || !absl::SimpleAtoi(argv[4], &streams) ||
      !absl::SimpleAtoi(argv[5], &frames) || !absl::SimpleAtoi(argv[6], &chunks) || dim < 1 ||
      streams < 1 || frames < 1 || chunks < 0) {
    std::fprintf(stderr, "usage: %s HOST:PORT MODEL DIM STREAMS CHUNK_FRAMES CHUNKS\n", argv[0]);
    return 2;
  }
  StreamScoreRequest config;
  config.mutable_config()->add_models(argv[2]);
  StreamScoreRequest chunk;
  chunk.mutable_chunk()->set_num_frames(frames);
  chunk.mutable_chunk()->set_dim(dim);
  for (int64_t i = 0; i < int64_t{frames} * dim; ++i) {
    chunk.mutable_chunk()->add_values(0.1f * static_cast<float>(i % 17) - 0.8f);
  }
  std::atomic<int> ended{0};
  absl::Mutex mu;
  std::map<int, int> codes;
  std::vector<std::unique_ptr<gmmscore::v1::AcousticScorer::Stub>> stubs;
  std::vector<std::unique_ptr<NonReader>> readers;
  for (int s = 0; s < streams; ++s) {
    grpc::ChannelArguments args;
    args.SetInt("gmmscore.test.connection", s);  // a connection of its own
    args.SetMaxReceiveMessageSize(-1);
    stubs.push_back(gmmscore::v1::AcousticScorer::NewStub(
        grpc::CreateCustomChannel(argv[1], grpc::InsecureChannelCredentials(), args)));
    readers.push_back(std::make_unique<NonReader>(stubs.back().get(), config, &chunk, chunks,
                                                  &ended, &mu, &codes));
  }
  std::printf("started %d\n", streams);
  std::fflush(stdout);
  while (ended.load() < streams) usleep(10000);
  std::string summary;
  {
    absl::MutexLock lock(&mu);
    for (const auto& [code, count] : codes) {
      summary += " code" + std::to_string(code) + "=" + std::to_string(count);
    }
  }
  std::printf("ended %d%s\n", streams, summary.c_str());
  std::fflush(stdout);
  // The readers are still referenced by gRPC until their calls are gone.
  readers.clear();
  return 0;
}
