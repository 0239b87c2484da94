// The /metrics endpoint (MetricsHttpServer over libmicrohttpd): each input is
// what one client sends on one connection. One server serves the whole run;
// per input: connect, send the bytes, half-close, read the answer (at most
// 2 s), close. Then a normal GET /metrics must answer 200 with the rendered
// body within 5 s; a server that died aborts the process anyway, one that
// stopped answering aborts here (a finding).
//
// libmicrohttpd itself is Debian's build, not instrumented: coverage comes
// from our callbacks only, so this is mostly mutation of the seeds; ASan
// and UBSan see our side (the logger, the answer), crashes anywhere.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "server/metrics_http_server.h"

namespace {

constexpr char kBody[] = "# TYPE fuzz_up gauge\nfuzz_up 1\n";

int ServerPort() {
  // Started once and never stopped (reachable from here, so no leak report).
  static gmmscore::MetricsHttpServer* const server = [] {
    absl::StatusOr<std::unique_ptr<gmmscore::MetricsHttpServer>> started =
        gmmscore::MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string(kBody); });
    if (!started.ok()) {
      std::fprintf(stderr, "metrics server did not start: %s\n",
                   started.status().ToString().c_str());
      std::abort();
    }
    return started->release();
  }();
  return server->port();
}

// Connect, send, half-close, read to the end (or `timeout_s`), close.
std::string Exchange(int port, std::string_view bytes, int timeout_s) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval timeout{};
  timeout.tv_sec = timeout_s;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    while (!bytes.empty()) {
      const ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) break;  // the server refused and closed first: allowed
      bytes.remove_prefix(static_cast<size_t>(sent));
    }
    shutdown(fd, SHUT_WR);
    char buffer[16384];
    for (;;) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      reply.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  return reply;
}

bool Alive(int port) {
  const std::string reply =
      Exchange(port, "GET /metrics HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n", 5);
  const std::string_view body(kBody);
  return reply.rfind("HTTP/1.1 200 ", 0) == 0 && reply.size() >= body.size() &&
         std::string_view(reply).substr(reply.size() - body.size()) == body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int port = ServerPort();
  Exchange(port, std::string_view(reinterpret_cast<const char*>(data), size), 2);
  // A scrape is answered at once; the retries only ride out a loaded machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!Alive(port)) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "GET /metrics no longer answers 200 after this input\n");
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}
