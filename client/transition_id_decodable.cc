#include "client/transition_id_decodable.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gmmscore {

absl::StatusOr<std::unique_ptr<TransitionIdDecodable>> TransitionIdDecodable::Create(
    StreamSession* session, std::vector<int32_t> transition_id_to_pdf, float acoustic_scale) {
  if (transition_id_to_pdf.size() < 2) {
    return absl::InvalidArgumentError(
        "the transition-id -> pdf map holds no transition-id (entry 0 is unused; ids start at 1)");
  }
  int32_t max_pdf = 0;
  for (size_t t = 1; t < transition_id_to_pdf.size(); ++t) {
    if (transition_id_to_pdf[t] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("transition-id ", t, " maps to pdf-id ",
                                                     transition_id_to_pdf[t], ", below 0"));
    }
    max_pdf = std::max(max_pdf, transition_id_to_pdf[t]);
  }
  return std::unique_ptr<TransitionIdDecodable>(
      new TransitionIdDecodable(session, std::move(transition_id_to_pdf), max_pdf, acoustic_scale));
}

TransitionIdDecodable::TransitionIdDecodable(StreamSession* session, std::vector<int32_t> map,
                                             int32_t max_pdf, float scale)
    : pdfs_(session, scale), transition_id_to_pdf_(std::move(map)), max_pdf_(max_pdf) {}

void TransitionIdDecodable::CheckMap() {
  if (checked_ || pdfs_.NumIndices() == 0) return;
  checked_ = true;
  if (max_pdf_ >= pdfs_.NumIndices()) {
    status_ = absl::FailedPreconditionError(absl::StrCat(
        "the transition model maps to pdf-id ", max_pdf_, " but the stream's model has ",
        pdfs_.NumIndices(), " states: is it the final.mdl of the served model?"));
  }
}

int32_t TransitionIdDecodable::NumFramesReady() {
  const int32_t ready = pdfs_.NumFramesReady();
  CheckMap();
  return status_.ok() ? ready : 0;
}

absl::Status TransitionIdDecodable::WaitForFrames(int32_t frames) {
  if (!status_.ok()) return status_;
  // One frame first, so that a mismatched map stops the decoder before it
  // reads any score.
  absl::Status waited = pdfs_.WaitForFrames(std::min(frames, 1));
  CheckMap();
  if (!status_.ok()) return status_;
  if (!waited.ok() || frames <= 1) return waited;
  return pdfs_.WaitForFrames(frames);
}

float TransitionIdDecodable::LogLikelihood(int32_t frame, int32_t transition_id) const {
  if (transition_id < 1 || transition_id > NumIndices() || !status_.ok()) {
    std::fprintf(stderr, "TransitionIdDecodable::LogLikelihood(%d, %d): transition-id must be in [1, %d]%s\n",
                 frame, transition_id, NumIndices(), status_.ok() ? "" : " (and the map fit the model)");
    std::abort();
  }
  return pdfs_.LogLikelihood(frame, transition_id_to_pdf_[transition_id]);
}

bool TransitionIdDecodable::IsLastFrame(int32_t frame) { return status_.ok() && pdfs_.IsLastFrame(frame); }

}  // namespace gmmscore
