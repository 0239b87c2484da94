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
// its heap), freed except one at the end that keeps the heap's top: glibc
// keeps the rest resident until a trim.
TEST(MemoryTrimmerTest, GivesABurstBackAndLeavesASteadyHeapAlone) {
  if (kSanitized) GTEST_SKIP() << "glibc malloc only";
  constexpr int kBlocks = 4096;
  constexpr size_t kBlock = 64 << 10;  // 256 MiB in all
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(malloc(kBlock)));
    std::memset(blocks.back(), 1, kBlock);  // make it resident
  }
  char* keep_top = static_cast<char*>(malloc(64));
  for (char* block : blocks) free(block);
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

TEST(MemoryTrimmerTest, ThreadStopsPromptly) {
  MemoryTrimmer trimmer({.period = absl::Milliseconds(5), .min_free_bytes = int64_t{1} << 40});
  trimmer.Stop();
  trimmer.Stop();  // idempotent
}

}  // namespace
}  // namespace gmmscore
