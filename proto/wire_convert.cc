#include "proto/wire_convert.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

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

namespace {

void CopyTotals(absl::Span<const float> frame_totals, v1::StateScores* out) {
  auto* totals = out->mutable_frame_totals();
  totals->Resize(static_cast<int>(frame_totals.size()), 0.0f);
  if (!frame_totals.empty()) {
    std::memcpy(totals->mutable_data(), frame_totals.data(), sizeof(float) * frame_totals.size());
  }
}

}  // namespace

void ScoresToProto(absl::string_view model, const FloatMatrix& loglikes,
                   absl::Span<const float> frame_totals, v1::StateScores* out,
                   const StateSelection& keep) {
  if (!keep.dense()) {
    SparseScoresToProto(model, SelectStates(loglikes.view(), keep), frame_totals, out);
    return;
  }
  out->set_model(std::string(model));
  out->set_num_frames(static_cast<uint32_t>(loglikes.rows()));
  out->set_num_states(static_cast<uint32_t>(loglikes.cols()));
  CopyTotals(frame_totals, out);
  out->clear_frame_offsets();
  out->clear_state_ids();
  auto* values = out->mutable_loglikes();
  const int64_t count = loglikes.rows() * loglikes.cols();
  values->Resize(static_cast<int>(count), 0.0f);
  if (count > 0) std::memcpy(values->mutable_data(), loglikes.data(), sizeof(float) * count);
}

void SparseScoresToProto(absl::string_view model, const SparseScores& kept,
                         absl::Span<const float> frame_totals, v1::StateScores* out) {
  out->set_model(std::string(model));
  out->set_num_frames(static_cast<uint32_t>(kept.num_frames()));
  out->set_num_states(static_cast<uint32_t>(kept.num_states));
  CopyTotals(frame_totals, out);
  out->mutable_frame_offsets()->Assign(kept.frame_offsets.begin(), kept.frame_offsets.end());
  out->mutable_state_ids()->Assign(kept.state_ids.begin(), kept.state_ids.end());
  out->mutable_loglikes()->Assign(kept.values.begin(), kept.values.end());
}

absl::StatusOr<FloatMatrix> ScoresFromProto(const v1::StateScores& scores) {
  const int64_t rows = scores.num_frames();
  const int64_t cols = scores.num_states();
  if (scores.frame_offsets_size() == 0 && scores.state_ids_size() == 0) {
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
  const int64_t kept = scores.state_ids_size();
  if (scores.frame_offsets_size() != rows + 1 || scores.loglikes_size() != kept ||
      scores.frame_offsets(0) != 0 || scores.frame_offsets(static_cast<int>(rows)) != kept) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sparse scores of '%s': %d frames need %d offsets from 0 to the %d state ids and %d values; "
        "got %d offsets",
        scores.model(), rows, rows + 1, kept, scores.loglikes_size(), scores.frame_offsets_size()));
  }
  FloatMatrix out(rows, cols, -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < rows; ++t) {
    const uint32_t begin = scores.frame_offsets(static_cast<int>(t));
    const uint32_t end = scores.frame_offsets(static_cast<int>(t + 1));
    if (end < begin || end > kept) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sparse scores of '%s': frame %d's offsets %d..%d go backwards or past the %d state ids",
          scores.model(), t, begin, end, kept));
    }
    for (uint32_t i = begin; i < end; ++i) {
      const uint32_t s = scores.state_ids(static_cast<int>(i));
      if (s >= cols || (i > begin && s <= scores.state_ids(static_cast<int>(i - 1)))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "sparse scores of '%s': frame %d has state id %d out of range or order (%d states)",
            scores.model(), t, s, cols));
      }
      out.at(t, s) = scores.loglikes(static_cast<int>(i));
    }
  }
  return out;
}

}  // namespace gmmscore
