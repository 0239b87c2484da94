// PeriodicThread: calls `tick` every `period` on a thread of its own until
// stopped: the loop the daemon's housekeepers share (StreamIdleWatchdog,
// MemoryTrimmer, DeviceProber). Stop wakes the thread at once (it does not
// wait out the period), lets a tick in progress finish, and returns once no
// tick runs or will run.
//
//   PeriodicThread ticker("gs-trim", absl::Seconds(10), [this] { TrimIfWorthIt(); });
//   ...
//   ticker.Stop();  // or the destructor
//
// The tick runs with no lock of this class held, so it may take its own
// locks and make gRPC calls; it must not call Stop (which would wait for it).
//
// Thread safety: Stop may be called from any thread but the tick's, more
// than once.
#ifndef GMMSCORE_SERVER_PERIODIC_THREAD_H_
#define GMMSCORE_SERVER_PERIODIC_THREAD_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gmmscore {

class PeriodicThread {
 public:
  // Starts the thread, named `name` (tools/thread_cpu.py groups by it; at
  // most 15 characters kept), first tick one `period` from now. A period
  // <= 0 starts nothing.
  PeriodicThread(std::string name, absl::Duration period, std::function<void()> tick);
  ~PeriodicThread();

  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Joins the thread; no tick runs after it returns.
  void Stop();

 private:
  void Loop();

  const std::string name_;
  const absl::Duration period_;
  const std::function<void()> tick_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;  // one Stop joins
  std::thread thread_;   // joined under join_mu_
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_PERIODIC_THREAD_H_
