#include "server/periodic_thread.h"

#include <utility>

#include "kernels/core/thread_name.h"

namespace gmmscore {

PeriodicThread::PeriodicThread(std::string name, absl::Duration period, std::function<void()> tick)
    : name_(std::move(name)), period_(period), tick_(std::move(tick)) {
  if (period_ > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
}

PeriodicThread::~PeriodicThread() { Stop(); }

void PeriodicThread::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock join_lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

void PeriodicThread::Loop() {
  NameCurrentThread(name_);
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_)) {
    // The tick runs without mu_: Stop must not wait for the lock behind it.
    mu_.Unlock();
    tick_();
    mu_.Lock();
  }
}

}  // namespace gmmscore
