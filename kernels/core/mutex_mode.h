// DisableMutexDeadlockDetection: for the main() of a program that serves or
// generates load. Debian's Abseil is built without NDEBUG, so every
// absl::Mutex::Lock in the process (ours, and gRPC 1.51's, whose locks are
// absl::Mutex too) runs Abseil's deadlock detector: a global spin lock, a
// lock-graph lookup, and a stack trace where another lock is held. On 2
// threads that is 20x slower for nested locks (3.7M against 72M pairs a
// second on this project's VM), and every thread of the process serialises
// on the one spin lock. Tests leave the detector on: they are where a lock
// order inversion should be caught.
#ifndef GMMSCORE_KERNELS_CORE_MUTEX_MODE_H_
#define GMMSCORE_KERNELS_CORE_MUTEX_MODE_H_

#include "absl/synchronization/mutex.h"

namespace gmmscore {

// Call before any thread is started.
inline void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_MUTEX_MODE_H_
