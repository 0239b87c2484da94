#include "server/metrics_http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

// Collects libmicrohttpd's own error messages so that a failed start says why.
void CollectLog(void* sink, const char* format, va_list args) {
  char line[512];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string& text = *static_cast<std::string*>(sink);
  if (!text.empty()) text += "; ";
  text += line;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
}

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

  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
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
  std::string start_errors;
  // Two threads answer scrapes (a scrape is a few microseconds of rendering);
  // a client that stalls is cut off after 10 s.
  server->daemon_ = MHD_start_daemon(
      flags, static_cast<uint16_t>(port), nullptr, nullptr, &AnswerRequest, server.get(),
      MHD_OPTION_EXTERNAL_LOGGER, &CollectLog, &start_errors,
      MHD_OPTION_THREAD_POOL_SIZE, 2u,
      MHD_OPTION_CONNECTION_TIMEOUT, 10u,
      // Without one address to bind, the list ends here (the pointer after
      // MHD_OPTION_END is never read).
      bind_one_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END,
      reinterpret_cast<sockaddr*>(&address), MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot serve metrics on %s: %s", listen,
        start_errors.empty() ? "libmicrohttpd did not start (address in use?)" : start_errors));
  }
  const MHD_DaemonInfo* bound = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  if (bound == nullptr || bound->port == 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot serve metrics on %s: no port was bound", listen));
  }
  server->port_ = bound->port;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

MetricsHttpServer::Answer MetricsHttpServer::Handle(const std::string& method,
                                                    const std::string& path) const {
  if (path != "/metrics") return {404, "only GET /metrics\n"};
  // libmicrohttpd drops the body of an answer to HEAD itself.
  if (method != "GET" && method != "HEAD") return {405, "only GET /metrics\n"};
  return {200, render_()};
}

}  // namespace gmmscore
