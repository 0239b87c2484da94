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
// (mallinfo2) and trims only when that is at least min_free_bytes, so a
// steady daemon never pays for a trim (which locks each arena while it walks
// it) and a burst is given back within a period of its end.
//
// Thread safety: Stop() may be called from any thread, more than once.
#ifndef GMMSCORE_SERVER_MEMORY_TRIMMER_H_
#define GMMSCORE_SERVER_MEMORY_TRIMMER_H_

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gmmscore {

struct MemoryTrimmerOptions {
  absl::Duration period = absl::Seconds(10);  // <= 0: start nothing
  int64_t min_free_bytes = int64_t{256} << 20;
};

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(MemoryTrimmerOptions options);
  ~MemoryTrimmer();

  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Joins the thread; nothing is trimmed after it returns.
  void Stop();

  // One look: trims if malloc holds at least min_free_bytes free; returns
  // the bytes malloc held free before (for tests and the log).
  int64_t TrimIfWorthIt();

 private:
  void Loop();

  const MemoryTrimmerOptions options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;
  std::thread thread_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MEMORY_TRIMMER_H_
