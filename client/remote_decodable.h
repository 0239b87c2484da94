// RemoteDecodable: a Kaldi-style decodable (the shape of Kaldi's
// DecodableInterface) over a StreamSession, so that a decoder's frame loop
// reads remote scores as if they were computed locally.
//
//   RemoteDecodable decodable(stream.get(), /*acoustic_scale=*/0.1f);
//   for (int t = 0; decodable.WaitForFrames(t + 1).ok(); ++t) {
//     for (int pdf : active_pdfs) cost = -decodable.LogLikelihood(t, pdf);
//     if (decodable.IsLastFrame(t)) break;
//   }
//
// Indices are 0-based states of the served model (Kaldi pdf-ids); a Kaldi
// decoder maps its transition-ids with TransitionModel::TransitionIdToPdf
// before asking, as DecodableAmDiagGmm does. Scores come from the fused
// matrix when the stream names several models.
//
// Thread safety: not thread-safe; meant for the decoder's thread. It pulls
// from the session (Next/TryNext), so nothing else may pull from it.
#ifndef GMMSCORE_CLIENT_REMOTE_DECODABLE_H_
#define GMMSCORE_CLIENT_REMOTE_DECODABLE_H_

#include <cstdint>
#include <deque>
#include <optional>

#include "absl/status/status.h"
#include "client/stream_session.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

class RemoteDecodable {
 public:
  // `session` must outlive this object. Every log-likelihood is multiplied
  // by `acoustic_scale` (like Kaldi's DecodableAmDiagGmmScaled).
  explicit RemoteDecodable(StreamSession* session, float acoustic_scale = 1.0f);

  // Takes the answers that have arrived, without waiting; frames
  // [0, NumFramesReady()) are scored.
  int32_t NumFramesReady();

  // Waits until `frames` frames are scored. OUT_OF_RANGE if the stream ended
  // OK with fewer; the stream's error if it failed.
  absl::Status WaitForFrames(int32_t frames);

  // acoustic_scale * log p(x_frame | state). Requires
  // first_frame_kept() <= frame < NumFramesReady() and
  // 0 <= state < NumIndices(); aborts with a message otherwise (a decoder
  // bug, as a failed KALDI_ASSERT would be).
  float LogLikelihood(int32_t frame, int32_t state) const;

  // Number of states; 0 before the first answer.
  int32_t NumIndices() const { return num_states_; }

  // True when the stream has ended (the client half-closed and every chunk
  // was answered) and `frame` is its last frame. Does not wait.
  bool IsLastFrame(int32_t frame);

  // Frees the scores of frames before `frame` (for long live streams).
  void DiscardFramesBefore(int32_t frame);
  int32_t first_frame_kept() const;

  // OK while the stream is healthy or ended OK; its error otherwise.
  const absl::Status& status() const { return status_; }

 private:
  struct Chunk {
    int64_t first_frame;
    FloatMatrix scores;
  };
  // Appends one answer or records the end.
  void Take(absl::StatusOr<StreamAnswer> answer);

  StreamSession* const session_;
  const float acoustic_scale_;
  std::deque<Chunk> chunks_;
  int64_t frames_ready_ = 0;
  int32_t num_states_ = 0;
  bool ended_ = false;
  absl::Status status_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_REMOTE_DECODABLE_H_
