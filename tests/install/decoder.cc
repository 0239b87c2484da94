// A decoder-style program built against an installed gmmscore (tests/install_test.sh):
// stream frames to a gmmscored and read their state scores back.
#include <cstdio>
#include <cstdlib>

#include "client/client.h"

int main(int argc, char** argv) {
  if (argc != 4) return std::fprintf(stderr, "usage: decoder HOST:PORT MODEL DIM\n"), 2;
  auto client = gmmscore::Client::Connect(argv[1]);
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;
  gmmscore::v1::StreamConfig config;
  config.add_models(argv[2]);
  auto stream = (*client)->StartStream(config);
  gmmscore::FloatMatrix frames(20, std::atoi(argv[3]), 0.5f);
  if (!stream.ok() || !(*stream)->Push(frames.view()).ok() || !(*stream)->CloseSend().ok()) return 1;
  auto answer = (*stream)->Next();
  if (!answer.ok()) return std::fprintf(stderr, "%s\n", answer.status().ToString().c_str()), 1;
  std::printf("frames %lld states %lld\n", static_cast<long long>(answer->scores.rows()),
              static_cast<long long>(answer->scores.cols()));
  return (*stream)->Finish().ok() ? 0 : 1;
}
