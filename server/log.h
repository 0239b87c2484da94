// One-line log messages on stderr for the daemon (Debian's Abseil predates
// absl/log). Thread-safe: each line is written with a single fwrite.
//
//   LogInfo("listening on %s", address);
//   LogWarning("stream %s: %s", id, status.ToString());
#ifndef GMMSCORE_SERVER_LOG_H_
#define GMMSCORE_SERVER_LOG_H_

#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

enum class LogLevel { kInfo, kWarning, kError };

// Writes "I1122 02:43:02.123456 gmmscored] message\n" (W / E for the others).
void LogLine(LogLevel level, absl::string_view message);

// When false, kInfo lines are dropped (tests keep their output short).
void SetInfoLogging(bool enabled);

// Also hands every line logged (without its prefix and newline; info lines
// too when SetInfoLogging keeps them off stderr) to `observer`; null: none.
// For tests of what reaches the log.
using LogObserver = void (*)(LogLevel level, absl::string_view message);
void SetLogObserver(LogObserver observer);

template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kInfo, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kWarning, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kError, absl::StrFormat(format, args...));
}

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_LOG_H_
