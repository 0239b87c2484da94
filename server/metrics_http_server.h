// MetricsHttpServer: GET /metrics over HTTP/1.1 (GNU libmicrohttpd, Debian's
// libmicrohttpd-dev), answering with whatever `render` returns in Prometheus
// text format. Any other path is 404, any other method 405.
//
//   GMM_ASSIGN_OR_RETURN(auto http, MetricsHttpServer::Start("0.0.0.0:9464",
//                                                           [&] { return metrics.Render(); }));
//   ... http->port() ...
//
// Why libmicrohttpd and not civetweb: Debian's civetweb creates its threads
// with a fixed 100 KiB stack, and glibc takes static TLS out of that stack;
// cuBLAS and OpenBLAS bring ~170 KiB of static TLS, so every civetweb thread
// failed to start in the CUDA build. libmicrohttpd uses the default stack.
//
// Thread safety: `render` is called on the server's threads, concurrently.
#ifndef GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
#define GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace gmmscore {

class MetricsHttpServer {
 public:
  // `listen` is HOST:PORT (port 0: a free one; host 0.0.0.0 or empty: every
  // IPv4 interface; [::]: every interface, IPv6 and IPv4). UNAVAILABLE if it
  // cannot be bound; INVALID_ARGUMENT if it is not HOST:PORT.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> render);
  // Stops serving (waits for requests in progress).
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

  // The answer to one request: status code and body (exposed for tests).
  struct Answer {
    int code;
    std::string body;
  };
  Answer Handle(const std::string& method, const std::string& path) const;

 private:
  explicit MetricsHttpServer(std::function<std::string()> render) : render_(std::move(render)) {}

  const std::function<std::string()> render_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
