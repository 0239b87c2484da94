#include "server/idle_watchdog.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace gmmscore {

StreamIdleWatchdog::StreamIdleWatchdog(StreamRegistry* registry, absl::Duration timeout)
    : registry_(registry),
      period_(std::clamp(timeout / 4, absl::Milliseconds(10), absl::Seconds(1))) {
  if (timeout > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
}

StreamIdleWatchdog::~StreamIdleWatchdog() { Stop(); }

void StreamIdleWatchdog::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock join_lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void StreamIdleWatchdog::Loop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_)) {
    // Streams are ended without mu_: ending one runs gRPC calls.
    mu_.Unlock();
    registry_->EndIdleStreams(absl::Now());
    mu_.Lock();
  }
}

}  // namespace gmmscore
