// TransitionIdDecodable: RemoteDecodable indexed as a Kaldi decoder asks,
// by transition-id, the way Kaldi's DecodableAmDiagGmmScaled is: the score
// of transition-id t is the served model's score of pdf
// TransitionIdToPdf(t). A decoder built on Kaldi's LatticeFasterDecoder or
// its FST search takes it where it took a local decodable.
//
//   GMM_ASSIGN_OR_RETURN(KaldiModel mdl, ReadKaldiModel("final.mdl"));   // kernels/io, or
//   // Kaldi's own: map[t] = trans_model.TransitionIdToPdf(t), map[0] unused
//   GMM_ASSIGN_OR_RETURN(auto decodable, TransitionIdDecodable::Create(
//       stream.get(), mdl.transition_model->transition_id_to_pdf, /*acoustic_scale=*/0.1f));
//   for (int t = 0; decodable->WaitForFrames(t + 1).ok(); ++t) {
//     for (int tid : active_arcs) cost = -decodable->LogLikelihood(t, tid);
//     if (decodable->IsLastFrame(t)) break;
//   }
//
// Transition-ids are 1-based, as in Kaldi (NumIndices() of them; index 0
// is unused). The first answer checks the map against the stream: a pdf-id
// at or past the served model's state count (a final.mdl of another model)
// ends the decodable with FAILED_PRECONDITION, from WaitForFrames and
// status().
//
// Thread safety: as RemoteDecodable (the decoder's thread only).
#ifndef GMMSCORE_CLIENT_TRANSITION_ID_DECODABLE_H_
#define GMMSCORE_CLIENT_TRANSITION_ID_DECODABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/remote_decodable.h"
#include "client/stream_session.h"

namespace gmmscore {

class TransitionIdDecodable {
 public:
  // `transition_id_to_pdf[t]` is transition-id t's pdf-id for t >= 1 (entry
  // 0 is ignored). INVALID_ARGUMENT when it holds no transition-id or a
  // negative pdf-id. `session` must outlive the decodable.
  static absl::StatusOr<std::unique_ptr<TransitionIdDecodable>> Create(
      StreamSession* session, std::vector<int32_t> transition_id_to_pdf, float acoustic_scale = 1.0f);

  // As RemoteDecodable's, and FAILED_PRECONDITION when the map does not fit
  // the served model.
  int32_t NumFramesReady();
  absl::Status WaitForFrames(int32_t frames);
  // acoustic_scale * log p(x_frame | pdf of transition_id). Requires a
  // ready frame and 1 <= transition_id <= NumIndices(); aborts with a
  // message otherwise (a decoder bug, as a failed KALDI_ASSERT would be).
  float LogLikelihood(int32_t frame, int32_t transition_id) const;
  // The number of transition-ids, as Kaldi's TransitionModel::NumTransitionIds.
  int32_t NumIndices() const { return static_cast<int32_t>(transition_id_to_pdf_.size()) - 1; }
  bool IsLastFrame(int32_t frame);
  void DiscardFramesBefore(int32_t frame) { pdfs_.DiscardFramesBefore(frame); }
  int32_t first_frame_kept() const { return pdfs_.first_frame_kept(); }
  const absl::Status& status() const { return status_.ok() ? pdfs_.status() : status_; }

 private:
  TransitionIdDecodable(StreamSession* session, std::vector<int32_t> map, int32_t max_pdf, float scale);
  // After the pdf decodable took answers: checks the map once the stream's
  // state count is known.
  void CheckMap();

  RemoteDecodable pdfs_;
  const std::vector<int32_t> transition_id_to_pdf_;
  const int32_t max_pdf_;
  absl::Status status_;  // the map's mismatch with the stream, if any
  bool checked_ = false;
};

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_TRANSITION_ID_DECODABLE_H_
