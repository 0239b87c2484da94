// StreamRegistry: the live StreamScore streams of a service, so that a drain
// can reach every one of them, and a cap on how many may be live.
//
//   if (!registry->Add(reactor)) { ...RESOURCE_EXHAUSTED... }
//   registry->DrainAll();   // on SIGTERM
//   registry->EndIdleStreams(absl::Now());  // from the idle watchdog
//   registry->Remove(reactor);  // from OnDone
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_STREAM_REGISTRY_H_
#define GMMSCORE_SERVER_STREAM_REGISTRY_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gmmscore {

// What the registry needs of a stream.
class DrainableStream {
 public:
  virtual ~DrainableStream() = default;
  // Keeps the stream object alive until the matching ReleaseHold, even if
  // its RPC ends meanwhile.
  virtual void AddHold() = 0;
  virtual void ReleaseHold() = 0;
  // Stop reading, answer what was accepted, end with UNAVAILABLE.
  virtual void Drain() = 0;
  // End the stream (DEADLINE_EXCEEDED, saying it was idle) if nothing has
  // moved on it for its idle timeout as of `now`, or cancel it if its client
  // has not taken an answer for its write timeout; otherwise nothing.
  virtual void EndIfIdle(absl::Time now) = 0;
};

class StreamRegistry {
 public:
  explicit StreamRegistry(int64_t max_streams) : max_streams_(max_streams) {}

  // False (and not added) when max_streams are live or DrainAll was called.
  bool Add(DrainableStream* stream);
  void Remove(DrainableStream* stream);

  // Drains every live stream; later Adds fail.
  void DrainAll();
  // Calls EndIfIdle(now) on every live stream.
  void EndIdleStreams(absl::Time now);

  int64_t live_streams() const;
  bool draining() const;

 private:
  // Every live stream, each held (AddHold) until the caller releases it.
  std::vector<DrainableStream*> HoldAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_streams_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<DrainableStream*> streams_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_REGISTRY_H_
