#include "server/memory_trimmer.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

#include "kernels/core/thread_name.h"
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

MemoryTrimmer::MemoryTrimmer(MemoryTrimmerOptions options) : options_(options) {
  if (options_.period > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
}

MemoryTrimmer::~MemoryTrimmer() { Stop(); }

void MemoryTrimmer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock join_lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

int64_t MemoryTrimmer::TrimIfWorthIt() {
  const struct mallinfo2 before = mallinfo2();
  // fordblks: free bytes in malloc's heaps (mmapped blocks go back on free).
  const int64_t free_bytes = static_cast<int64_t>(before.fordblks);
  if (free_bytes < options_.min_free_bytes) return free_bytes;
  const int64_t rss_before = ResidentBytes();
  const absl::Time start = absl::Now();
  malloc_trim(0);
  LogInfo("memory: malloc held %.0f MiB free; trimmed in %s, resident %.0f -> %.0f MiB",
          free_bytes / 1048576.0, absl::FormatDuration(absl::Now() - start),
          rss_before / 1048576.0, ResidentBytes() / 1048576.0);
  return free_bytes;
}

void MemoryTrimmer::Loop() {
  NameCurrentThread("gs-trim");
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.period)) {
    mu_.Unlock();
    TrimIfWorthIt();
    mu_.Lock();
  }
}

}  // namespace gmmscore
