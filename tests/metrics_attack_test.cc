// Hostile and broken clients of --metrics_listen (issue 16, item 1), over raw
// TCP sockets: an HTTP/2 preface, a TLS ClientHello, random bytes, requests
// closed half-way, a GET closed (FIN or RST) before or while its answer is
// sent (a Prometheus scrape timeout), a 1 MB header, a header line without
// a colon, 1,100 connections at once. Each of these once aborted the daemon
// (libmicrohttpd's error log wrote into a dead stack string). After every
// case a normal GET /metrics must still answer 200 with the rendered body,
// and the server's record of libmicrohttpd's errors must stay bounded.
//
// Waits poll for a condition up to a generous deadline; no assertion rests on
// a fixed sleep.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics_http_server.h"

namespace gmmscore {
namespace {

using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;

// A socket connected to 127.0.0.1:`port`; every send and receive gives up
// after 5 s, so no case can hang the test. -1 when it cannot connect.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{};
  timeout.tv_sec = 5;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `bytes`; false when the server closed first (allowed: it may
// refuse a hostile request before reading all of it).
bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

// Everything the server sends until it closes (or resets, or 5 s pass).
std::string ReadToEnd(int fd) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

// Closes with a FIN, or with an RST (SO_LINGER 0) as a client killed
// mid-request or a proxy giving up does.
void CloseSocket(int fd, bool reset) {
  if (reset) {
    linger abort{};
    abort.l_onoff = 1;
    abort.l_linger = 0;
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  }
  close(fd);
}

// Sends `bytes`, half-closes, returns what the server said before closing.
std::string Exchange(int port, std::string_view bytes) {
  const int fd = Connect(port);
  if (fd < 0) return "(cannot connect)";
  SendAll(fd, bytes);
  shutdown(fd, SHUT_WR);
  std::string reply = ReadToEnd(fd);
  close(fd);
  return reply;
}

// The status code of an HTTP/1.x reply, 0 when there is none.
int StatusOf(std::string_view reply) {
  if (reply.size() < 12 || reply.substr(0, 7) != "HTTP/1.") return 0;
  return std::atoi(std::string(reply.substr(9, 3)).c_str());
}

// A refusal is either an HTTP error status or the connection closed with
// nothing said; never a 2xx to garbage.
void ExpectRefused(const std::string& reply, const std::string& what) {
  if (reply.empty()) return;
  const int code = StatusOf(reply);
  EXPECT_TRUE(code >= 400 && code <= 599)
      << what << ": " << reply.substr(0, std::min<size_t>(reply.size(), 200));
}

struct Reply {
  int code = 0;
  std::string body;
};

Reply Get(int port) {
  const std::string text =
      Exchange(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  Reply reply;
  reply.code = StatusOf(text);
  const size_t body = text.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = text.substr(body + 4);
  return reply;
}

// A TLS 1.3 ClientHello for "localhost" (what a scraper configured for
// https sends first), record layer included.
std::string TlsClientHello() {
  std::string body;
  auto u8 = [](std::string& out, int v) { out.push_back(static_cast<char>(v & 0xff)); };
  auto u16 = [&](std::string& out, int v) {
    u8(out, v >> 8);
    u8(out, v);
  };
  u16(body, 0x0303);                                // legacy_version TLS 1.2
  for (int i = 0; i < 32; ++i) u8(body, 0x5a ^ i);  // random
  u8(body, 32);                                     // legacy_session_id
  for (int i = 0; i < 32; ++i) u8(body, i);
  const int suites[] = {0x1301, 0x1302, 0x1303, 0xc02f, 0xc030, 0x00ff};
  u16(body, static_cast<int>(sizeof(suites) / sizeof(suites[0]) * 2));
  for (int suite : suites) u16(body, suite);
  u8(body, 1);  // compression methods: null
  u8(body, 0);
  std::string extensions;
  const std::string host = "localhost";
  u16(extensions, 0x0000);  // server_name
  u16(extensions, static_cast<int>(host.size()) + 5);
  u16(extensions, static_cast<int>(host.size()) + 3);
  u8(extensions, 0);
  u16(extensions, static_cast<int>(host.size()));
  extensions += host;
  u16(extensions, 0x002b);  // supported_versions: TLS 1.3, 1.2
  u16(extensions, 5);
  u8(extensions, 4);
  u16(extensions, 0x0304);
  u16(extensions, 0x0303);
  u16(extensions, 0x000a);  // supported_groups: x25519
  u16(extensions, 4);
  u16(extensions, 2);
  u16(extensions, 0x001d);
  u16(extensions, 0x0033);  // key_share: x25519, 32 bytes
  u16(extensions, 38);
  u16(extensions, 36);
  u16(extensions, 0x001d);
  u16(extensions, 32);
  for (int i = 0; i < 32; ++i) u8(extensions, 0xa5 ^ i);
  u16(body, static_cast<int>(extensions.size()));
  body += extensions;

  std::string handshake;
  u8(handshake, 0x01);  // ClientHello
  u8(handshake, static_cast<int>(body.size()) >> 16);
  u16(handshake, static_cast<int>(body.size()));
  handshake += body;
  std::string record;
  u8(record, 0x16);  // handshake record, TLS 1.0 on the wire
  u16(record, 0x0301);
  u16(record, static_cast<int>(handshake.size()));
  return record + handshake;
}

class MetricsAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 1 MiB of exposition, so that a scraper that goes away finds the server
    // still in the middle of sending.
    for (int i = 0; body_.size() < (1u << 20); ++i) {
      absl::StrAppend(&body_, "gmmscore_attack_test_series{i=\"", i, "\"} ", i, "\n");
    }
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
        MetricsHttpServer::Start("127.0.0.1:0", [this] { return body_; });
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    ExpectAlive("start");
  }

  void TearDown() override {
    if (server_ == nullptr) return;
    ExpectAlive("the whole test");
    EXPECT_LE(server_->recent_errors().size(), MetricsHttpServer::kMaxRecentErrorBytes);
  }

  int port() const { return server_->port(); }

  // GET /metrics answers 200 with the rendered body, within 15 s (the server
  // may first have to notice that a flood of connections went away).
  void ExpectAlive(const std::string& after) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(15);
    Reply reply;
    for (;;) {
      reply = Get(port());
      if (reply.code == 200 && reply.body == body_) return;
      if (Clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "GET /metrics after " << after << ": status " << reply.code << ", "
                  << reply.body.size() << " body bytes of " << body_.size();
  }

  std::string body_;
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(MetricsAttackTest, Http2Preface) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  // An empty SETTINGS frame, as an h2c client with prior knowledge sends next.
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  for (int round = 0; round < 20; ++round) {
    ExpectRefused(Exchange(port(), round % 2 == 0 ? preface : preface + settings), "preface");
  }
  // And closed without waiting for the answer.
  for (int round = 0; round < 20; ++round) {
    const int fd = Connect(port());
    ASSERT_GE(fd, 0);
    SendAll(fd, preface + settings);
    CloseSocket(fd, /*reset=*/round % 2 == 1);
  }
  ExpectAlive("HTTP/2 prefaces");
}

TEST_F(MetricsAttackTest, TlsClientHello) {
  const std::string hello = TlsClientHello();
  for (int round = 0; round < 20; ++round) ExpectRefused(Exchange(port(), hello), "ClientHello");
  for (int round = 0; round < 20; ++round) {
    const int fd = Connect(port());
    ASSERT_GE(fd, 0);
    SendAll(fd, hello);
    CloseSocket(fd, /*reset=*/round % 2 == 1);
  }
  ExpectAlive("TLS ClientHellos");
}

TEST_F(MetricsAttackTest, RandomBytes) {
  std::mt19937 random(20261124);
  for (int round = 0; round < 400; ++round) {
    std::string bytes;
    // A quarter start as a real request, so the garbage reaches the header
    // parser rather than the request line.
    if (round % 4 == 1) bytes = "GET /metrics HTTP/1.1\r\n";
    const size_t size = 1 + random() % (round % 10 == 0 ? 65536 : 2048);
    for (size_t i = 0; i < size; ++i) {
      // Line ends now and then, so that there are "lines" to parse.
      bytes.push_back(random() % 32 == 0 ? '\n' : static_cast<char>(random() & 0xff));
    }
    switch (round % 3) {
      case 0: {
        const std::string reply = Exchange(port(), bytes);
        if (round % 4 == 1) {
          // Garbage headers may pass libmicrohttpd's lenient parser and the
          // GET be answered; any answer must still be HTTP.
          EXPECT_TRUE(reply.empty() || StatusOf(reply) != 0)
              << "round " << round << ": " << reply.substr(0, 200);
        } else {
          ExpectRefused(reply, absl::StrCat("random bytes, round ", round));
        }
        break;
      }
      case 1:
      case 2: {
        const int fd = Connect(port());
        ASSERT_GE(fd, 0);
        SendAll(fd, bytes);
        CloseSocket(fd, /*reset=*/round % 3 == 2);
        break;
      }
    }
    if (round % 50 == 49) ExpectAlive(absl::StrCat("random bytes, round ", round));
  }
}

TEST_F(MetricsAttackTest, RequestClosedHalfWay) {
  const std::vector<std::string> partial = {
      "G",
      "GET /metr",
      "GET /metrics HTTP/1.1\r\n",
      "GET /metrics HTTP/1.1\r\nHost: loc",
      "GET /metrics HTTP/1.1\r\nHost: localhost\r\n",
      "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n0123456789",
      "POST /metrics HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n100\r\nab",
  };
  for (int round = 0; round < 5; ++round) {
    for (const std::string& bytes : partial) {
      ExpectRefused(Exchange(port(), bytes), bytes);  // half-closed: the server sees EOF
      for (bool reset : {false, true}) {
        const int fd = Connect(port());
        ASSERT_GE(fd, 0);
        SendAll(fd, bytes);
        CloseSocket(fd, reset);
      }
    }
  }
  ExpectAlive("requests closed half-way");
}

// A scrape that times out: the scraper sends a whole GET and closes (FIN, or
// RST when killed) before reading the answer, either at once or once the
// answer has started to arrive (the server is then in the middle of its 1 MiB).
TEST_F(MetricsAttackTest, GetClosedBeforeTheAnswerIsRead) {
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
  for (int round = 0; round < 80; ++round) {
    const int fd = Connect(port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, get));
    if (round % 4 >= 2) {
      pollfd readable{fd, POLLIN, 0};
      ASSERT_EQ(poll(&readable, 1, 10000), 1) << "no answer started within 10 s";
      char first[16];
      ASSERT_GT(recv(fd, first, sizeof(first), 0), 0);
    }
    CloseSocket(fd, /*reset=*/round % 2 == 1);
  }
  ExpectAlive("GETs closed before their answer was read");
}

// Request lines and headers beyond the per-connection memory are refused (414
// or 431, or the connection closed) and do not grow anything.
TEST_F(MetricsAttackTest, MegabyteHeader) {
  const std::string megabyte(1 << 20, 'a');
  std::string many_headers;
  for (int i = 0; many_headers.size() < (1u << 20); ++i) {
    absl::StrAppend(&many_headers, "X-Header-", i, ": ", std::string(80, 'b'), "\r\n");
  }
  const std::vector<std::pair<std::string, int>> requests = {
      {"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: " + megabyte + "\r\n\r\n", 431},
      {"GET /metrics HTTP/1.1\r\nHost: localhost\r\n" + many_headers + "\r\n", 431},
      {"GET /" + megabyte + " HTTP/1.1\r\nHost: localhost\r\n\r\n", 414},
  };
  const int64_t errors_before = server_->errors_logged();
  for (const auto& [request, code] : requests) {
    for (int round = 0; round < 3; ++round) {
      const int fd = Connect(port());
      ASSERT_GE(fd, 0);
      // Sent from a second thread while this one reads: the server answers
      // and closes long before the megabyte is through.
      std::thread sender([fd, &request] {
        SendAll(fd, request);
        shutdown(fd, SHUT_WR);
      });
      const std::string reply = ReadToEnd(fd);
      sender.join();
      close(fd);
      // Reading can lose the answer to the RST that the server's close with
      // our unread bytes sends; when it arrived, it is the right one.
      if (!reply.empty()) {
        EXPECT_EQ(StatusOf(reply), code) << reply.substr(0, 200);
      }
    }
    ExpectAlive(absl::StrCat("a 1 MB request expecting ", code));
  }
  // Each refusal was logged by libmicrohttpd and counted, not lost.
  EXPECT_GE(server_->errors_logged(), errors_before + 9);
}

TEST_F(MetricsAttackTest, HeaderLineWithoutColon) {
  const std::vector<std::string> requests = {
      "GET /metrics HTTP/1.1\r\nHost: localhost\r\nThisLineHasNoColon\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nNoColon\r\nHost: localhost\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nHost: localhost\r\n   \r\n\r\n",
      "GET /metrics HTTP/1.1\r\n: no name\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nHost: localhost\r\nNoColon",  // and no end
  };
  for (int round = 0; round < 10; ++round) {
    for (const std::string& request : requests) {
      const std::string reply = Exchange(port(), request);
      // libmicrohttpd may answer a malformed header 400 or let it pass and
      // answer the GET; it must not crash and must close cleanly.
      const int code = StatusOf(reply);
      EXPECT_TRUE(reply.empty() || code == 200 || (code >= 400 && code <= 599))
          << reply.substr(0, std::min<size_t>(reply.size(), 200));
    }
  }
  ExpectAlive("header lines without a colon");
}

// 1,100 connections at once, idle or with half a request: the server takes
// what its connection limit allows, the rest wait in the kernel's backlog,
// and once they go away (half FIN, half RST) a scrape is answered again.
TEST_F(MetricsAttackTest, ThousandConnections) {
  constexpr int kConnections = 1100;
  // Client and server ends both live in this process.
  constexpr rlim_t kFilesNeeded = 2 * kConnections + 256;
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < kFilesNeeded) {
    if (files.rlim_max != RLIM_INFINITY && files.rlim_max < kFilesNeeded) {
      GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << files.rlim_max << " is below " << kFilesNeeded
                   << "; cannot open " << kConnections << " connections";
    }
    files.rlim_cur = kFilesNeeded;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  }

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << "socket " << i << ": " << std::strerror(errno);
    fds.push_back(fd);
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << "connect " << i << ": " << std::strerror(errno);
  }
  // Wait (up to 10 s) until the kernel has completed the connections it will;
  // half of them then send the start of a request.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  std::vector<bool> connected(fds.size(), false);
  int connected_count = 0;
  while (connected_count < kConnections && Clock::now() < deadline) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (connected[i]) continue;
      pollfd writable{fds[i], POLLOUT, 0};
      if (poll(&writable, 1, 0) == 1 && (writable.revents & POLLOUT) != 0) {
        connected[i] = true;
        ++connected_count;
        if (i % 2 == 0) send(fds[i], "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
      }
    }
    if (connected_count < kConnections) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RecordProperty("connected", connected_count);
  ASSERT_GT(connected_count, static_cast<int>(MetricsHttpServer::kConnectionLimit))
      << "the flood did not even reach the connection limit";
  // The server fills up to its limit and no further.
  const Clock::time_point full_deadline = Clock::now() + std::chrono::seconds(10);
  int open = 0;
  while ((open = server_->open_connections()) <
             static_cast<int>(MetricsHttpServer::kConnectionLimit) &&
         Clock::now() < full_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(open, static_cast<int>(MetricsHttpServer::kConnectionLimit));
  for (size_t i = 0; i < fds.size(); ++i) CloseSocket(fds[i], /*reset=*/i % 2 == 0);
  ExpectAlive("1,100 connections");
  // And lets all of them go (those from the backlog too).
  const Clock::time_point empty_deadline = Clock::now() + std::chrono::seconds(10);
  while ((open = server_->open_connections()) > 0 && Clock::now() < empty_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(open, 0);
}

// The start error still says why (libmicrohttpd's own message), now from the
// server's log rather than a string on Start's stack.
TEST(MetricsHttpServerStartTest, PortInUseSaysWhy) {
  const int taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(taken, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(taken, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(taken, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);

  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
      MetricsHttpServer::Start(absl::StrCat("127.0.0.1:", port), [] { return std::string(); });
  close(taken);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(started.status().message()), HasSubstr("Address already in use"));
}

}  // namespace
}  // namespace gmmscore
