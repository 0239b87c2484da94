// StreamRegistry: the live StreamScore streams of a service, so that a drain
// can reach every one of them, a cap on how many may be live, and how they
// fall on client connections (each busy connection lengthens every chunk's
// way in: docs/OPERATIONS.md, "Client connections").
//
//   if (!registry->Add(reactor, context->peer())) { ...RESOURCE_EXHAUSTED... }
//   registry->DrainAll();   // on SIGTERM
//   registry->EndIdleStreams(absl::Now());  // from the idle watchdog
//   registry->Remove(reactor);  // from OnDone
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_STREAM_REGISTRY_H_
#define GMMSCORE_SERVER_STREAM_REGISTRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
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
  // `peer`: the client's address as gRPC names it ("ipv4:10.0.0.7:51234"),
  // one per connection (all clients of a unix socket share one).
  bool Add(DrainableStream* stream, absl::string_view peer);
  void Remove(DrainableStream* stream);

  // Drains every live stream; later Adds fail.
  void DrainAll();
  // Calls EndIfIdle(now) on every live stream.
  void EndIdleStreams(absl::Time now);

  int64_t live_streams() const;
  bool draining() const;

  struct Connections {
    int64_t connections = 0;   // peers with live streams
    int64_t most_streams = 0;  // the live streams of the busiest one
  };
  // O(peers): for a metrics scrape, not a hot path.
  Connections connections() const;

 private:
  // Every live stream, each held (AddHold) until the caller releases it.
  std::vector<DrainableStream*> HoldAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_streams_;
  mutable absl::Mutex mu_;
  // Every live stream and its peer; the live streams of each peer.
  absl::flat_hash_map<DrainableStream*, std::string> streams_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int64_t> streams_per_peer_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_REGISTRY_H_
