// StreamIdleWatchdog: ends streams on which nothing has moved for the
// stream idle timeout (--stream_idle_timeout_s), and streams whose client
// has not taken an answer for the write timeout (--stream_write_timeout_s).
// A client that opens a stream and then neither sends nor reads holds a
// stream slot, its reactor and its plan's model versions; one that sends but
// never reads also holds its answers. This gives them back
// (StreamRegistry::EndIdleStreams -> DrainableStream::EndIfIdle, which
// applies both timeouts).
//
//   StreamIdleWatchdog watchdog(&registry, absl::Seconds(60));  // the shorter timeout
//   ...  // a thread looks every timeout/4 (at most every second)
//   watchdog.Stop();  // or the destructor
//
// Thread safety: Stop() may be called from any thread, more than once.
#ifndef GMMSCORE_SERVER_IDLE_WATCHDOG_H_
#define GMMSCORE_SERVER_IDLE_WATCHDOG_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/stream_registry.h"

namespace gmmscore {

class StreamIdleWatchdog {
 public:
  // `registry` must outlive the watchdog. A `timeout` <= 0 starts nothing.
  StreamIdleWatchdog(StreamRegistry* registry, absl::Duration timeout);
  ~StreamIdleWatchdog();

  StreamIdleWatchdog(const StreamIdleWatchdog&) = delete;
  StreamIdleWatchdog& operator=(const StreamIdleWatchdog&) = delete;

  // Joins the thread; no stream is checked after it returns.
  void Stop();

 private:
  void Loop();

  StreamRegistry* const registry_;
  // How often the streams are looked at: a stream ends between timeout and
  // timeout + period after its last activity.
  const absl::Duration period_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;  // one Stop joins
  std::thread thread_;  // joined under join_mu_
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_IDLE_WATCHDOG_H_
