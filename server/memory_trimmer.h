// MemoryTrimmer: gives memory that glibc's malloc keeps after a burst back to
// the operating system, so that monitoring does not read a burst as a leak.
//
//   MemoryTrimmer trimmer({.period = absl::Seconds(10), .min_free_bytes = 256 << 20});
//   ...  // a thread looks every period
//   trimmer.Stop();  // or the destructor
//
// Why: after 200 clients that never read were cancelled, the daemon's
// answers were freed but its RSS stayed at 4 GB (of 5.2 GB at the peak):
// glibc returns freed memory in the middle of its heaps only on malloc_trim
// (issue 16). Every period the trimmer asks malloc how much it holds free
// (mallinfo2) and trims only when that is at least min_free_bytes, so that
// a burst is given back within a period or so of its end.
//
// Not while the load goes on: a busy daemon's answers churn through 256
// MiB and more of free blocks (at 4500 streams of case (a) on an H200,
// 500-900 MiB free against 90-190 MiB in use), and a trim locks each arena
// while it walks it. Those trims took 10-150 ms, time in which answers
// waited; a stall of 50-70 ms tipped a daemon near its capacity into
// batches too large to catch up (docs/PERFORMANCE.md, "Answers without
// copies"), and what a trim gave back was faulted in again within seconds.
// With `work_done` (the frames scored, say) a trim waits for a period that
// did at most a quarter of the work of the busiest of the last six: the
// burst is over, or the load has fallen. So that a burst's leftovers are
// not kept for as long as a steady load lasts, a trim still comes after
// kMaxLooksWithoutTrim looks in a row that found enough free but were not
// quiet (5 minutes at the default period): one stall then, not one a period.
//
// Thread safety: Stop() may be called from any thread, more than once.
#ifndef GMMSCORE_SERVER_MEMORY_TRIMMER_H_
#define GMMSCORE_SERVER_MEMORY_TRIMMER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "absl/time/time.h"
#include "server/periodic_thread.h"

namespace gmmscore {

struct MemoryTrimmerOptions {
  absl::Duration period = absl::Seconds(10);  // <= 0: start nothing
  int64_t min_free_bytes = int64_t{256} << 20;
  // A counter of the work done so far, read at each look (from the
  // trimmer's thread); null: trims whatever the load.
  std::function<int64_t()> work_done;
};

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(MemoryTrimmerOptions options);
  ~MemoryTrimmer();

  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Joins the thread; nothing is trimmed after it returns.
  void Stop() { ticker_->Stop(); }

  // One look: trims if malloc holds at least min_free_bytes free and the
  // period since the last look was quiet (above); returns the bytes malloc
  // held free before (for tests and the log). One caller at a time.
  int64_t TrimIfWorthIt();

 private:
  // Whether the work since the last look was at most a quarter of the
  // busiest of the last kPeriodsRemembered looks' (true without work_done).
  bool QuietSinceLastLook();

  static constexpr int kPeriodsRemembered = 6;
  static constexpr int kMaxLooksWithoutTrim = 30;

  const MemoryTrimmerOptions options_;
  int64_t last_work_ = 0;                  // work_done() at the last look
  std::deque<int64_t> recent_periods_;    // work of the last looks' periods
  int looks_without_trim_ = 0;            // in a row, with enough free, not quiet
  // Started last in the constructor (its ticks read the members above);
  // never null.
  std::unique_ptr<PeriodicThread> ticker_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MEMORY_TRIMMER_H_
