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

#include "absl/time/time.h"
#include "server/periodic_thread.h"
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
  void Stop() { ticker_.Stop(); }

 private:
  StreamRegistry* const registry_;
  // Looks every timeout/4, clamped to [10 ms, 1 s]: a stream ends between
  // timeout and timeout + period after its last activity. Last member: its
  // thread starts once the others exist.
  PeriodicThread ticker_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_IDLE_WATCHDOG_H_
