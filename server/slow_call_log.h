// Logs the backend calls that take far longer than a batch should: a
// device's stall. Nearly all calls of fast top_k 10000 take 0.1-3.2 ms on
// an H200, yet each daemon of stop 55's last six points had 9-12 calls of
// 51-410 ms in its gmmscore_backend_score_seconds, its warm-up included
// (docs/PERFORMANCE.md). At 10^6 frames a second a stall of about 130 ms
// fills half the queue, where new streams are refused. The histogram says
// how many; this line says when, on which device and with what batch, to
// match against the refusals.
//
//   SlowCallLog slow({.device = "cuda:0"});
//   scheduler_options.on_group = [&](const GroupReport& r) { slow.Observe(r); };
//
// At most one line per `interval`; the calls it leaves out are counted in
// the next line, or in a last line when the log is destroyed. Calls that
// fail are not reported here (GroupReport is of calls that scored; a
// device's failures have their own lines, device_router.h). Thread-safe.
#ifndef GMMSCORE_SERVER_SLOW_CALL_LOG_H_
#define GMMSCORE_SERVER_SLOW_CALL_LOG_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/batch_scheduler.h"

namespace gmmscore {

struct SlowCallLogOptions {
  std::string device;  // as in the daemon's other lines: "cuda:0"
  // A call at least this long is logged: half of a 100-ms chunk. For a GPU:
  // the CPU backend's batches take that long by design.
  absl::Duration threshold = absl::Milliseconds(50);
  absl::Duration interval = absl::Seconds(1);
  std::function<absl::Time()> clock = absl::Now;  // tests step their own
};

class SlowCallLog {
 public:
  explicit SlowCallLog(SlowCallLogOptions options);
  // Logs the slow calls no line has counted yet, if any.
  ~SlowCallLog();
  SlowCallLog(const SlowCallLog&) = delete;
  SlowCallLog& operator=(const SlowCallLog&) = delete;

  // Logs `report` (a warning) when its call was slow and no line was
  // written in the last interval; else counts it for the next line.
  void Observe(const GroupReport& report);

  // Slow calls seen so far, logged or not.
  int64_t slow_calls() const;

 private:
  const SlowCallLogOptions options_;
  mutable absl::Mutex mu_;
  absl::Time last_line_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t unlogged_ ABSL_GUARDED_BY(mu_) = 0;  // slow calls since the last line
  int64_t slow_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SLOW_CALL_LOG_H_
