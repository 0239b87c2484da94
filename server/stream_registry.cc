#include "server/stream_registry.h"

#include <algorithm>
#include <vector>

#include "absl/base/macros.h"

namespace gmmscore {

bool StreamRegistry::Add(DrainableStream* stream, absl::string_view peer) {
  absl::MutexLock lock(&mu_);
  if (draining_ || static_cast<int64_t>(streams_.size()) >= max_streams_) return false;
  if (!streams_.emplace(stream, std::string(peer)).second) return true;  // already there
  ++streams_per_peer_[peer];
  return true;
}

void StreamRegistry::Remove(DrainableStream* stream) {
  absl::MutexLock lock(&mu_);
  const auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  const auto peer = streams_per_peer_.find(it->second);
  ABSL_ASSERT(peer != streams_per_peer_.end());  // every stream's peer is counted
  if (--peer->second == 0) streams_per_peer_.erase(peer);
  streams_.erase(it);
}

StreamRegistry::Connections StreamRegistry::connections() const {
  absl::MutexLock lock(&mu_);
  Connections counts{.connections = static_cast<int64_t>(streams_per_peer_.size())};
  for (const auto& [peer, streams] : streams_per_peer_) {
    counts.most_streams = std::max(counts.most_streams, streams);
  }
  return counts;
}

std::vector<DrainableStream*> StreamRegistry::HoldAllLocked() {
  std::vector<DrainableStream*> streams;
  for (const auto& [stream, peer] : streams_) {
    stream->AddHold();  // a stream cannot be deleted before Remove, which waits for mu_
    streams.push_back(stream);
  }
  return streams;
}

void StreamRegistry::DrainAll() {
  std::vector<DrainableStream*> streams;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    streams = HoldAllLocked();
  }
  // Drained outside mu_, so that nothing a drain triggers can wait on it.
  for (DrainableStream* stream : streams) {
    stream->Drain();
    stream->ReleaseHold();
  }
}

void StreamRegistry::EndIdleStreams(absl::Time now) {
  std::vector<DrainableStream*> streams;
  {
    absl::MutexLock lock(&mu_);
    streams = HoldAllLocked();
  }
  for (DrainableStream* stream : streams) {
    stream->EndIfIdle(now);
    stream->ReleaseHold();
  }
}

int64_t StreamRegistry::live_streams() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(streams_.size());
}

bool StreamRegistry::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

}  // namespace gmmscore
