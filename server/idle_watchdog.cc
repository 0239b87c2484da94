#include "server/idle_watchdog.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace gmmscore {

StreamIdleWatchdog::StreamIdleWatchdog(StreamRegistry* registry, absl::Duration timeout)
    : registry_(registry),
      ticker_("gs-idle",
              timeout > absl::ZeroDuration()
                  ? std::clamp(timeout / 4, absl::Milliseconds(10), absl::Seconds(1))
                  : absl::ZeroDuration(),
              [this] { registry_->EndIdleStreams(absl::Now()); }) {}

StreamIdleWatchdog::~StreamIdleWatchdog() { Stop(); }

}  // namespace gmmscore
