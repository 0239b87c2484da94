#include "client/remote_decodable.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gmmscore {

RemoteDecodable::RemoteDecodable(StreamSession* session, float acoustic_scale)
    : session_(session), acoustic_scale_(acoustic_scale) {}

void RemoteDecodable::Take(absl::StatusOr<StreamAnswer> answer) {
  if (!answer.ok()) {
    ended_ = true;
    if (!absl::IsOutOfRange(answer.status())) status_ = answer.status();
    return;
  }
  num_states_ = static_cast<int32_t>(answer->scores.cols());
  frames_ready_ = answer->first_frame + answer->scores.rows();
  chunks_.push_back({answer->first_frame, std::move(answer->scores)});
}

int32_t RemoteDecodable::NumFramesReady() {
  while (!ended_) {
    absl::StatusOr<std::optional<StreamAnswer>> next = session_->TryNext();
    if (next.ok() && !next->has_value()) break;
    if (next.ok()) {
      Take(std::move(**next));
    } else {
      Take(next.status());
    }
  }
  return static_cast<int32_t>(frames_ready_);
}

absl::Status RemoteDecodable::WaitForFrames(int32_t frames) {
  NumFramesReady();
  while (frames_ready_ < frames && !ended_) Take(session_->Next());
  if (frames_ready_ >= frames) return absl::OkStatus();
  if (!status_.ok()) return status_;
  return absl::OutOfRangeError("the stream ended before that frame");
}

float RemoteDecodable::LogLikelihood(int32_t frame, int32_t state) const {
  auto after = std::upper_bound(chunks_.begin(), chunks_.end(), frame,
                                [](int64_t f, const Chunk& c) { return f < c.first_frame; });
  if (after == chunks_.begin() || frame >= frames_ready_ || state < 0 || state >= num_states_) {
    std::fprintf(stderr,
                 "RemoteDecodable::LogLikelihood(%d, %d): frame must be in [%d, %lld) and "
                 "state in [0, %d)\n",
                 frame, state, first_frame_kept(), static_cast<long long>(frames_ready_),
                 num_states_);
    std::abort();
  }
  const Chunk& chunk = *(after - 1);
  return acoustic_scale_ * chunk.scores.at(frame - chunk.first_frame, state);
}

bool RemoteDecodable::IsLastFrame(int32_t frame) {
  NumFramesReady();
  return ended_ && status_.ok() && frame == frames_ready_ - 1;
}

void RemoteDecodable::DiscardFramesBefore(int32_t frame) {
  while (!chunks_.empty() &&
         chunks_.front().first_frame + chunks_.front().scores.rows() <= frame) {
    chunks_.pop_front();
  }
}

int32_t RemoteDecodable::first_frame_kept() const {
  return chunks_.empty() ? static_cast<int32_t>(frames_ready_)
                         : static_cast<int32_t>(chunks_.front().first_frame);
}

}  // namespace gmmscore
