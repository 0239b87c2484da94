#include "server/slow_call_log.h"

#include <utility>

#include "server/log.h"

namespace gmmscore {

SlowCallLog::SlowCallLog(SlowCallLogOptions options) : options_(std::move(options)) {}

SlowCallLog::~SlowCallLog() {
  absl::MutexLock lock(&mu_);
  if (unlogged_ == 0) return;
  LogWarning("backend calls on %s: %d more over %d ms since the last such line", options_.device,
             unlogged_, absl::ToInt64Milliseconds(options_.threshold));
}

void SlowCallLog::Observe(const GroupReport& report) {
  if (report.score_time < options_.threshold) return;
  const absl::Time now = options_.clock();
  int64_t left_out = 0;
  {
    absl::MutexLock lock(&mu_);
    ++slow_calls_;
    if (now - last_line_ < options_.interval) {
      ++unlogged_;
      return;
    }
    last_line_ = now;
    left_out = unlogged_;
    unlogged_ = 0;
  }
  LogWarning("backend call on %s took %d ms: %d frames, %d chunks of %d streams; %d more calls "
             "over %d ms since the last such line",
             options_.device, absl::ToInt64Milliseconds(report.score_time), report.frames,
             report.jobs, report.origins, left_out, absl::ToInt64Milliseconds(options_.threshold));
}

int64_t SlowCallLog::slow_calls() const {
  absl::MutexLock lock(&mu_);
  return slow_calls_;
}

}  // namespace gmmscore
