#include "server/memory_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "server/log.h"

namespace gmmscore {
namespace {

// This process's resident bytes (/proc/self/statm), or -1.
int64_t ResidentBytes() {
  long pages = -1, resident = -1;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  const int read = std::fscanf(statm, "%ld %ld", &pages, &resident);
  std::fclose(statm);
  return read == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

}  // namespace

MemoryTrimmer::MemoryTrimmer(MemoryTrimmerOptions options) : options_(std::move(options)) {
  if (options_.work_done) last_work_ = options_.work_done();
  ticker_ = std::make_unique<PeriodicThread>("gs-trim", options_.period, [this] { TrimIfWorthIt(); });
}

MemoryTrimmer::~MemoryTrimmer() { Stop(); }

int64_t MemoryTrimmer::TrimIfWorthIt() {
  const bool quiet = QuietSinceLastLook();
  const struct mallinfo2 before = mallinfo2();
  // fordblks: free bytes in malloc's heaps (mmapped blocks go back on free);
  // uordblks and hblkhd: bytes in use in the heaps and in mapped blocks.
  const int64_t free_bytes = static_cast<int64_t>(before.fordblks);
  const int64_t in_use = static_cast<int64_t>(before.uordblks + before.hblkhd);
  if (free_bytes < options_.min_free_bytes) {
    looks_without_trim_ = 0;
    return free_bytes;
  }
  if (!quiet && ++looks_without_trim_ < kMaxLooksWithoutTrim) return free_bytes;
  looks_without_trim_ = 0;
  const int64_t rss_before = ResidentBytes();
  const absl::Time start = absl::Now();
  malloc_trim(0);
  LogInfo("memory: malloc held %.0f MiB free, %.0f MiB in use; trimmed in %s, resident %.0f -> "
          "%.0f MiB",
          free_bytes / 1048576.0, in_use / 1048576.0, absl::FormatDuration(absl::Now() - start),
          rss_before / 1048576.0, ResidentBytes() / 1048576.0);
  return free_bytes;
}

bool MemoryTrimmer::QuietSinceLastLook() {
  if (!options_.work_done) return true;
  const int64_t work = options_.work_done();
  const int64_t period = work - last_work_;
  last_work_ = work;
  recent_periods_.push_back(period);
  if (recent_periods_.size() > kPeriodsRemembered) recent_periods_.pop_front();
  const int64_t busiest = *std::max_element(recent_periods_.begin(), recent_periods_.end());
  return 4 * period <= busiest;
}

}  // namespace gmmscore
