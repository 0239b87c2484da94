#include "server/stream_registry.h"

#include <vector>

namespace gmmscore {

bool StreamRegistry::Add(DrainableStream* stream) {
  absl::MutexLock lock(&mu_);
  if (draining_ || static_cast<int64_t>(streams_.size()) >= max_streams_) return false;
  streams_.insert(stream);
  return true;
}

void StreamRegistry::Remove(DrainableStream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

std::vector<DrainableStream*> StreamRegistry::HoldAllLocked() {
  std::vector<DrainableStream*> streams;
  for (DrainableStream* stream : streams_) {
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
