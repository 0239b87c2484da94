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
// Hostile or broken clients (anything but HTTP/1.x, requests cut off, a
// scraper that closes before reading its answer, huge headers, connection
// floods) get an error status or a closed connection; the server lives on.
// At most kConnectionLimit connections are served at once (more wait in
// the kernel's backlog), each within kConnectionMemory bytes of request and
// answer headers (a request line or headers beyond that: 414 or 431).
// libmicrohttpd's error messages are kept by the server: the start error
// quotes them; after start they are counted, the last few kept
// (errors_logged(), recent_errors()), and at most one a minute goes to the
// daemon's log (server/log.h) with the count.
//
// Thread safety: `render` is called on the server's threads, concurrently.
// errors_logged() and recent_errors() may be called from any thread.
#ifndef GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
#define GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

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

  // Connections served at once (split over the server's threads).
  static constexpr unsigned kConnectionLimit = 256;
  // Per connection: the request line, the headers and the answer's headers.
  static constexpr size_t kConnectionMemory = 32 * 1024;
  // recent_errors() keeps the last messages within this many bytes.
  static constexpr size_t kMaxRecentErrorBytes = 4096;

  // Connections open now (for tests: libmicrohttpd sums its threads' counts
  // without a lock, so call it from one thread at a time).
  int open_connections() const;

  // How many error messages libmicrohttpd has logged (start included): a
  // refused request, a client gone mid-answer, the connection limit reached.
  int64_t errors_logged() const;
  // The last of them, oldest first, joined by "; " (at most
  // kMaxRecentErrorBytes).
  std::string recent_errors() const;

  // The answer to one request: status code and body (exposed for tests).
  struct Answer {
    int code;
    std::string body;
  };
  Answer Handle(const std::string& method, const std::string& path) const;

 private:
  explicit MetricsHttpServer(std::function<std::string()> render) : render_(std::move(render)) {}

  // libmicrohttpd's logger (MHD_OPTION_EXTERNAL_LOGGER), called from its
  // threads with `self` this server: the server outlives every call, since
  // the destructor stops the daemon (joining its threads) first.
  static void LogFromLibrary(void* self, const char* format, va_list args);
  void RecordError(std::string message);

  const std::function<std::string()> render_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;

  mutable absl::Mutex log_mu_;
  std::deque<std::string> recent_errors_ ABSL_GUARDED_BY(log_mu_);
  size_t recent_error_bytes_ ABSL_GUARDED_BY(log_mu_) = 0;
  int64_t errors_logged_ ABSL_GUARDED_BY(log_mu_) = 0;
  // Until Start has succeeded, messages are only kept (they become the start
  // error); after, they also reach the daemon's log, rate-limited.
  bool started_ ABSL_GUARDED_BY(log_mu_) = false;
  absl::Time last_logged_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_METRICS_HTTP_SERVER_H_
