// A client that streams until it is killed: cancellation_test starts a few
// of these and SIGKILLs them mid-stream, as a crashed decoder would vanish.
//
//   vanishing_client HOST:PORT MODEL DIM
//
// Prints "streaming" once its first chunk was answered, then keeps pushing
// chunks without ever reading another answer.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/time/clock.h"
#include "client/client.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s HOST:PORT MODEL DIM\n", argv[0]);
    return 2;
  }
  auto client = gmmscore::Client::Connect(argv[1]);
  if (!client.ok()) return 1;
  gmmscore::v1::StreamConfig config;
  config.add_models(argv[2]);
  auto session = (*client)->StartStream(config);
  if (!session.ok()) return 1;
  const gmmscore::FloatMatrix chunk(5, std::atoi(argv[3]), 0.25f);
  if (!(*session)->Push(chunk.view()).ok() || !(*session)->Next().ok()) return 1;
  std::printf("streaming\n");
  std::fflush(stdout);
  while ((*session)->Push(chunk.view()).ok()) absl::SleepFor(absl::Milliseconds(1));
  return 1;
}
