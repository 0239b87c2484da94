// MetricsHttpServer: GET /metrics over HTTP/1.1 (civetweb, Debian's
// libcivetweb), answering with whatever `render` returns in Prometheus text
// format. Anything else is 404.
//
//   GMM_ASSIGN_OR_RETURN(auto http, MetricsHttpServer::Start("0.0.0.0:9464",
//                                                           [&] { return metrics.Render(); }));
//   ... http->port() ...
//
// Thread safety: `render` is called on civetweb's threads, concurrently.
#ifndef GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
#define GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct mg_context;
struct mg_connection;

namespace gmmscore {

class MetricsHttpServer {
 public:
  // `listen` is HOST:PORT (port 0: a free one). UNAVAILABLE if it cannot be
  // bound; INVALID_ARGUMENT if it is not HOST:PORT.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> render);
  // Stops serving (waits for requests in progress).
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  explicit MetricsHttpServer(std::function<std::string()> render) : render_(std::move(render)) {}
  static int HandleMetrics(mg_connection* connection, void* self);

  const std::function<std::string()> render_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
