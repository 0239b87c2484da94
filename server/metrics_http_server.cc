#include "server/metrics_http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/log.h"

namespace gmmscore {
namespace {

// After start, a stream of bad requests must not become a stream of log
// lines: one line a minute at most reaches the daemon's log, with the count.
constexpr absl::Duration kLogInterval = absl::Minutes(1);

MHD_Result AnswerRequest(void* self, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/,
                         const char* /*upload_data*/, size_t* upload_data_size,
                         void** /*request_state*/) {
  // A request body (nobody should send one) is read and ignored.
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  const MetricsHttpServer::Answer answer =
      static_cast<const MetricsHttpServer*>(self)->Handle(method, url);
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), const_cast<char*>(answer.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          answer.code == 200 ? "text/plain; version=0.0.4; charset=utf-8"
                                             : "text/plain");
  if (answer.code == 405) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  const MHD_Result queued = MHD_queue_response(connection, answer.code, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--metrics_listen '%s' is not HOST:PORT", listen));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }

  // poll() rather than libmicrohttpd's default select(), which cannot watch
  // a descriptor numbered FD_SETSIZE (1024) or above: in a daemon with many
  // gRPC clients, or under a flood, accepted sockets are. Not epoll: there
  // libmicrohttpd 0.9.75 keeps a half-closed connection holding part of a
  // request until the 10 s timeout, where poll() sees the end at once.
  unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  sockaddr_storage address{};
  bool bind_one_address = false;
  if (host == "::") {
    flags |= MHD_USE_DUAL_STACK;
  } else if (!host.empty() && host != "0.0.0.0") {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    const int failed = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
    if (failed != 0 || found == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--metrics_listen '%s': cannot resolve host '%s': %s", listen, host,
          failed != 0 ? gai_strerror(failed) : "no address"));
    }
    std::memcpy(&address, found->ai_addr, found->ai_addrlen);
    if (found->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    freeaddrinfo(found);
    bind_one_address = true;
  }

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(render)));
  // The logger writes into `server`, which outlives the daemon (it once
  // wrote into a string on this stack: every error after start was a write
  // into a dead frame, and the daemon aborted).
  //
  // Two threads answer scrapes (a scrape is a few microseconds of rendering);
  // a client that stalls is cut off after 10 s. A scraper needs one
  // connection and a few hundred bytes of request, so the limits are far
  // above need and bound what a flood can take: kConnectionLimit connections
  // of kConnectionMemory each (libmicrohttpd's default memory, stated; 8 MiB
  // in all). No per-IP limit: on loopback and behind a proxy or sidecar every
  // scraper has the same address, so it would cut off the scrapes themselves
  // while an attacker with several addresses passes it anyway; the global
  // limit is what keeps a flood from exhausting descriptors or memory.
  server->daemon_ = MHD_start_daemon(
      flags, static_cast<uint16_t>(port), nullptr, nullptr, &AnswerRequest, server.get(),
      MHD_OPTION_EXTERNAL_LOGGER, &MetricsHttpServer::LogFromLibrary, server.get(),
      MHD_OPTION_THREAD_POOL_SIZE, 2u,
      MHD_OPTION_CONNECTION_TIMEOUT, 10u,
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned int>(kConnectionLimit),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(kConnectionMemory),
      // Without one address to bind, the list ends here (the pointer after
      // MHD_OPTION_END is never read).
      bind_one_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END,
      reinterpret_cast<sockaddr*>(&address), MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    const std::string why = server->recent_errors();
    return absl::UnavailableError(absl::StrFormat(
        "cannot serve metrics on %s: %s", listen,
        why.empty() ? "libmicrohttpd did not start (address in use?)" : why));
  }
  const MHD_DaemonInfo* bound = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  if (bound == nullptr || bound->port == 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot serve metrics on %s: no port was bound", listen));
  }
  server->port_ = bound->port;
  {
    absl::MutexLock lock(&server->log_mu_);
    server->started_ = true;
  }
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

int MetricsHttpServer::open_connections() const {
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  return info == nullptr ? -1 : static_cast<int>(info->num_connections);
}

int64_t MetricsHttpServer::errors_logged() const {
  absl::MutexLock lock(&log_mu_);
  return errors_logged_;
}

std::string MetricsHttpServer::recent_errors() const {
  absl::MutexLock lock(&log_mu_);
  return absl::StrJoin(recent_errors_, "; ");
}

void MetricsHttpServer::LogFromLibrary(void* self, const char* format, va_list args) {
  // One message to a line of at most 511 bytes. Messages can quote the
  // client's bytes (a URL): control characters become spaces so that a
  // request cannot forge lines in the daemon's log.
  char line[512];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string message(line);
  for (char& c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  while (!message.empty() && message.back() == ' ') message.pop_back();
  static_cast<MetricsHttpServer*>(self)->RecordError(std::move(message));
}

void MetricsHttpServer::RecordError(std::string message) {
  int64_t count = 0;
  bool log_it = false;
  {
    absl::MutexLock lock(&log_mu_);
    count = ++errors_logged_;
    // recent_error_bytes_ counts each message with its "; " separator.
    recent_error_bytes_ += message.size() + 2;
    recent_errors_.push_back(message);
    // (A message is at most 511 bytes: the newest always stays.)
    while (recent_errors_.size() > 1 && recent_error_bytes_ - 2 > kMaxRecentErrorBytes) {
      recent_error_bytes_ -= recent_errors_.front().size() + 2;
      recent_errors_.pop_front();
    }
    const absl::Time now = absl::Now();
    if (started_ && now - last_logged_ >= kLogInterval) {
      last_logged_ = now;
      log_it = true;
    }
  }
  // Outside the lock: the log writes to stderr, which can block.
  if (log_it) {
    LogWarning("metrics HTTP (libmicrohttpd): %s (%d errors so far; at most one logged a minute)",
               message, count);
  }
}

MetricsHttpServer::Answer MetricsHttpServer::Handle(const std::string& method,
                                                    const std::string& path) const {
  if (path != "/metrics") return {404, "only GET /metrics\n"};
  // libmicrohttpd drops the body of an answer to HEAD itself.
  if (method != "GET" && method != "HEAD") return {405, "only GET /metrics\n"};
  return {200, render_()};
}

}  // namespace gmmscore
