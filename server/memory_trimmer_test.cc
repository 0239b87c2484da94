#include "server/memory_trimmer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

int64_t Resident() {
  long pages = 0, resident = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  const int read = std::fscanf(statm, "%ld %ld", &pages, &resident);
  std::fclose(statm);
  return read == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan's allocator is not glibc's
#else
constexpr bool kSanitized = false;
#endif

// A burst of small blocks (below malloc's mmap threshold, so they live in
// its heap), 256 MiB in all, freed except the one it returns (free it at
// the end), which keeps the heap's top: glibc keeps the rest resident until
// a trim. `blocks` must outlive the test's looks: with the vector freed on
// return, glibc had given the burst back before the first look.
char* FreedBurst(std::vector<char*>* blocks) {
  constexpr int kBlocks = 4096;
  constexpr size_t kBlock = 64 << 10;
  for (int i = 0; i < kBlocks; ++i) {
    blocks->push_back(static_cast<char*>(malloc(kBlock)));
    std::memset(blocks->back(), 1, kBlock);  // make it resident
  }
  char* keep_top = static_cast<char*>(malloc(64));
  for (char* block : *blocks) free(block);
  return keep_top;
}

// Options for a trimmer the test drives look by look (no thread), reading
// the work done from *frames.
MemoryTrimmerOptions CountingLooks(const int64_t* frames) {
  return {.period = absl::ZeroDuration(),
          .min_free_bytes = int64_t{32} << 20,
          .work_done = [frames] { return *frames; }};
}

TEST(MemoryTrimmerTest, GivesABurstBackAndLeavesASteadyHeapAlone) {
  if (kSanitized) GTEST_SKIP() << "glibc malloc only";
  std::vector<char*> blocks;
  char* keep_top = FreedBurst(&blocks);
  const int64_t held = Resident();

  // (free() itself gives some back, e.g. the heap's top; what glibc keeps
  // depends on its heuristics, so the test asks for a large share of it.)
  MemoryTrimmer lazy({.period = absl::ZeroDuration(), .min_free_bytes = int64_t{1} << 40});
  const int64_t free_bytes = lazy.TrimIfWorthIt();
  ASSERT_GE(free_bytes, int64_t{64} << 20);           // it saw the free bytes ...
  EXPECT_GT(Resident(), held - (int64_t{16} << 20));  // ... and left them alone

  MemoryTrimmer trimmer({.period = absl::ZeroDuration(), .min_free_bytes = int64_t{32} << 20});
  EXPECT_GE(trimmer.TrimIfWorthIt(), int64_t{64} << 20);
  EXPECT_LT(Resident(), held - free_bytes / 2);
  free(keep_top);
}

// A daemon under load: its answers' free blocks would pass min_free_bytes
// at every look, and a trim would stall them. The trimmer waits until a
// period does at most a quarter of the busiest recent one's work.
TEST(MemoryTrimmerTest, WaitsForTheLoadToFall) {
  if (kSanitized) GTEST_SKIP() << "glibc malloc only";
  std::vector<char*> blocks;
  char* keep_top = FreedBurst(&blocks);
  const int64_t held = Resident();

  int64_t frames = 500;  // done before the trimmer starts: not its periods'
  MemoryTrimmer trimmer(CountingLooks(&frames));
  for (int64_t work : {1000, 1000, 800, 300}) {  // steady, then falling, not yet to a quarter
    frames += work;
    ASSERT_GE(trimmer.TrimIfWorthIt(), int64_t{64} << 20);
    EXPECT_GT(Resident(), held - (int64_t{16} << 20)) << "trimmed under a load of " << work;
  }
  frames += 250;  // a quarter of the busiest of the last six periods
  const int64_t free_bytes = trimmer.TrimIfWorthIt();
  ASSERT_GE(free_bytes, int64_t{64} << 20);
  EXPECT_LT(Resident(), held - free_bytes / 2);
  free(keep_top);
}

// An idle daemon (no work at all) is quiet; a load that never falls gets a
// trim every kMaxLooksWithoutTrim looks, so a burst's leftovers go back in
// the end.
TEST(MemoryTrimmerTest, IdleIsQuietAndASteadyLoadStillGetsARareTrim) {
  if (kSanitized) GTEST_SKIP() << "glibc malloc only";
  std::vector<char*> blocks;
  char* keep_top = FreedBurst(&blocks);
  int64_t frames = 0;
  MemoryTrimmer idle(CountingLooks(&frames));
  int64_t held = Resident();
  const int64_t free_idle = idle.TrimIfWorthIt();
  ASSERT_GE(free_idle, int64_t{64} << 20);
  EXPECT_LT(Resident(), held - free_idle / 2);
  free(keep_top);

  blocks.clear();
  keep_top = FreedBurst(&blocks);
  held = Resident();
  MemoryTrimmer busy(CountingLooks(&frames));
  for (int look = 1; look < 30; ++look) {
    frames += 1000;
    ASSERT_GE(busy.TrimIfWorthIt(), int64_t{64} << 20);
    ASSERT_GT(Resident(), held - (int64_t{16} << 20)) << "look " << look;
  }
  frames += 1000;
  const int64_t free_busy = busy.TrimIfWorthIt();  // the 30th
  EXPECT_LT(Resident(), held - free_busy / 2);
  free(keep_top);
}

TEST(MemoryTrimmerTest, ThreadStopsPromptly) {
  MemoryTrimmer trimmer({.period = absl::Milliseconds(5), .min_free_bytes = int64_t{1} << 40});
  trimmer.Stop();
  trimmer.Stop();  // idempotent
}

}  // namespace
}  // namespace gmmscore
