// AudioStreamStats: what the front ends of a service's audio streams
// (StreamConfig.audio) did, summed: for GetServerStats and /metrics, so that
// an operator can see what audio in costs beside the scoring.
#ifndef GMMSCORE_SERVER_AUDIO_STREAM_STATS_H_
#define GMMSCORE_SERVER_AUDIO_STREAM_STATS_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace gmmscore {

struct AudioCounters {
  int64_t streams = 0;       // audio streams started
  int64_t samples = 0;       // samples received
  int64_t frames = 0;        // feature frames the front ends gave
  int64_t front_end_us = 0;  // time in the front ends (decoding included)
};

// Thread-safe; lock-free.
class AudioStreamStats {
 public:
  void AddStream() { streams_.fetch_add(1, std::memory_order_relaxed); }
  void Add(int64_t samples, int64_t frames, absl::Duration took) {
    samples_.fetch_add(samples, std::memory_order_relaxed);
    frames_.fetch_add(frames, std::memory_order_relaxed);
    front_end_us_.fetch_add(absl::ToInt64Microseconds(took), std::memory_order_relaxed);
  }
  AudioCounters totals() const {
    return {.streams = streams_.load(std::memory_order_relaxed),
            .samples = samples_.load(std::memory_order_relaxed),
            .frames = frames_.load(std::memory_order_relaxed),
            .front_end_us = front_end_us_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<int64_t> streams_{0}, samples_{0}, frames_{0}, front_end_us_{0};
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_AUDIO_STREAM_STATS_H_
