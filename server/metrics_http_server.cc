#include "server/metrics_http_server.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "civetweb.h"

namespace gmmscore {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> render) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--metrics_listen '%s' is not HOST:PORT", listen));
  }
  // civetweb binds "PORT" for all interfaces, "HOST:PORT" for one.
  std::string ports = listen;
  const std::string host = listen.substr(0, colon);
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) ports = listen.substr(colon + 1);
  static const bool initialised = [] {
    mg_init_library(0);
    return true;
  }();
  (void)initialised;

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(render)));
  const char* options[] = {"listening_ports", ports.c_str(), "num_threads", "2",
                           "request_timeout_ms", "10000", nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };  // quiet
  server->context_ = mg_start(&callbacks, nullptr, options);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrFormat("cannot serve metrics on %s (address in use?)", listen));
  }
  // Every path comes here (civetweb's own error pages crash in Debian's
  // 1.15 without a document root); the handler answers 404 itself.
  mg_set_request_handler(server->context_, "/", &MetricsHttpServer::HandleMetrics, server.get());
  mg_server_port bound[4];
  const int count = mg_get_server_ports(server->context_, 4, bound);
  if (count < 1) return absl::UnavailableError("the metrics server bound no port");
  server->port_ = bound[0].port;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int MetricsHttpServer::HandleMetrics(mg_connection* connection, void* self) {
  const mg_request_info* request = mg_get_request_info(connection);
  const bool get = std::strcmp(request->request_method, "GET") == 0;
  const bool head = std::strcmp(request->request_method, "HEAD") == 0;
  int code = 200;
  const char* reason = "OK";
  std::string body;
  if (std::strcmp(request->local_uri, "/metrics") != 0) {
    code = 404;
    reason = "Not Found";
    body = "only GET /metrics\n";
  } else if (!get && !head) {
    code = 405;
    reason = "Method Not Allowed";
    body = "only GET /metrics\n";
  } else {
    body = static_cast<MetricsHttpServer*>(self)->render_();
  }
  mg_printf(connection,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            code, reason,
            code == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain", body.size());
  if (!head) mg_write(connection, body.data(), body.size());
  return code;
}

}  // namespace gmmscore
