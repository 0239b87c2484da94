// StreamAudio: an audio stream's front end (StreamConfig.audio). Each audio
// chunk's bytes are decoded (PCM16, or float32 scaled to 16 bits as the
// front end works on) and run through a LiveFrontEnd; what comes out is the
// feature frames the stream scores, exactly as feature chunks would be.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<StreamAudio> audio, StreamAudio::Create(config.audio(), plan));
//   GMM_ASSIGN_OR_RETURN(FloatMatrix frames, audio->Push(request.audio()));  // maybe 0 rows
//   GMM_ASSIGN_OR_RETURN(FloatMatrix rest, audio->Finish());                 // at the half-close
//
// The front end is the models' (ServedModel::front_end), with live CMN
// (batch CMN needs the whole utterance; -cmn none stays none). Not
// thread-safe: the session calls it under its mutex.
#ifndef GMMSCORE_SERVER_STREAM_AUDIO_H_
#define GMMSCORE_SERVER_STREAM_AUDIO_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/frontend/live_front_end.h"
#include "server/audio_stream_stats.h"
#include "server/scoring_plan.h"

namespace gmmscore {

class StreamAudio {
 public:
  // INVALID_ARGUMENT: no encoding, or a sample rate that is not the front
  // end's; FAILED_PRECONDITION: a model of the plan has no front end (the
  // message says why) or two have different ones.
  // `stats` (may be null) counts the stream, its samples, frames and time.
  // A chunk may hold at most `max_chunk_frames` frames of audio (their
  // shifts plus one window), as a feature chunk may: one message must not
  // hold the stream's lock, and the server's memory, for minutes of audio.
  static absl::StatusOr<std::unique_ptr<StreamAudio>> Create(const v1::AudioStreamConfig& config,
                                                             const ScoringPlan& plan, int64_t max_chunk_frames,
                                                             AudioStreamStats* stats);

  // The feature frames `chunk` completed. INVALID_ARGUMENT for no samples,
  // more than max_samples(), a byte count that is not whole samples, or a
  // non-finite float (its position in the stream named).
  absl::StatusOr<FloatMatrix> Push(const v1::AudioChunk& chunk);
  // The frames held back for lookahead, and the last partial one.
  absl::StatusOr<FloatMatrix> Finish();

  bool finished() const { return finished_; }
  int64_t max_samples() const { return max_samples_; }
  int64_t samples() const { return samples_; }

 private:
  StreamAudio(v1::AudioStreamConfig::Encoding encoding, std::unique_ptr<LiveFrontEnd> front_end,
              int64_t max_samples, AudioStreamStats* stats)
      : encoding_(encoding), front_end_(std::move(front_end)), max_samples_(max_samples), stats_(stats) {}
  // Counts what one Push or Finish did since `start`.
  void Count(int64_t samples, const absl::StatusOr<FloatMatrix>& frames, absl::Time start);

  const v1::AudioStreamConfig::Encoding encoding_;
  const std::unique_ptr<LiveFrontEnd> front_end_;
  const int64_t max_samples_;
  AudioStreamStats* const stats_;
  int64_t samples_ = 0;
  bool finished_ = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_AUDIO_H_
