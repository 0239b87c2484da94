#include "proto/wire_convert.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"

namespace gmmscore {

absl::StatusOr<FloatMatrix> FeaturesFromProto(const v1::FeatureMatrix& features) {
  const int64_t rows = features.num_frames();
  const int64_t cols = features.dim();
  if (rows > 0 && cols == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("feature matrix has %d frames but dim 0", rows));
  }
  if (static_cast<int64_t>(features.values_size()) != rows * cols) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "feature matrix says %d frames x %d dims = %d values but carries %d values", rows, cols,
        rows * cols, features.values_size()));
  }
  FloatMatrix out(rows, cols);
  if (rows * cols > 0) {
    std::memcpy(out.data(), features.values().data(), sizeof(float) * rows * cols);
  }
  return out;
}

void FeaturesToProto(ConstMatrixView frames, v1::FeatureMatrix* out) {
  out->set_num_frames(static_cast<uint32_t>(frames.rows));
  out->set_dim(static_cast<uint32_t>(frames.cols));
  auto* values = out->mutable_values();
  values->Resize(static_cast<int>(frames.rows * frames.cols), 0.0f);
  for (int64_t t = 0; t < frames.rows; ++t) {
    std::memcpy(values->mutable_data() + t * frames.cols, frames.row(t),
                sizeof(float) * frames.cols);
  }
}

void ScoresToProto(absl::string_view model, const FloatMatrix& loglikes,
                   absl::Span<const float> frame_totals, v1::StateScores* out) {
  out->set_model(std::string(model));
  out->set_num_frames(static_cast<uint32_t>(loglikes.rows()));
  out->set_num_states(static_cast<uint32_t>(loglikes.cols()));
  auto* values = out->mutable_loglikes();
  const int64_t count = loglikes.rows() * loglikes.cols();
  values->Resize(static_cast<int>(count), 0.0f);
  if (count > 0) std::memcpy(values->mutable_data(), loglikes.data(), sizeof(float) * count);
  auto* totals = out->mutable_frame_totals();
  totals->Resize(static_cast<int>(frame_totals.size()), 0.0f);
  if (!frame_totals.empty()) {
    std::memcpy(totals->mutable_data(), frame_totals.data(), sizeof(float) * frame_totals.size());
  }
}

absl::StatusOr<FloatMatrix> ScoresFromProto(const v1::StateScores& scores) {
  const int64_t rows = scores.num_frames();
  const int64_t cols = scores.num_states();
  if (static_cast<int64_t>(scores.loglikes_size()) != rows * cols) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scores of '%s' say %d frames x %d states but carry %d values", scores.model(), rows, cols,
        scores.loglikes_size()));
  }
  FloatMatrix out(rows, cols);
  if (rows * cols > 0) {
    std::memcpy(out.data(), scores.loglikes().data(), sizeof(float) * rows * cols);
  }
  return out;
}

}  // namespace gmmscore
