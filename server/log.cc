#include "server/log.h"

#include <atomic>
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gmmscore {
namespace {
std::atomic<bool> info_enabled{true};
std::atomic<LogObserver> observer{nullptr};
}  // namespace

void SetInfoLogging(bool enabled) { info_enabled.store(enabled, std::memory_order_relaxed); }

void SetLogObserver(LogObserver to) { observer.store(to, std::memory_order_release); }

void LogLine(LogLevel level, absl::string_view message) {
  if (LogObserver to = observer.load(std::memory_order_acquire); to != nullptr) to(level, message);
  if (level == LogLevel::kInfo && !info_enabled.load(std::memory_order_relaxed)) return;
  const char tag = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  const std::string line =
      absl::StrFormat("%c%s gmmscored] %s\n", tag,
                      absl::FormatTime("%m%d %H:%M:%E6S", absl::Now(), absl::LocalTimeZone()),
                      message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gmmscore
