#include "kernels/train/stats_backend.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/core/feature_values.h"

namespace gmmscore {

absl::Status ValidateFrames(ConstMatrixView frames) {
  for (int64_t t = 0; t < frames.rows; ++t) {
    const float* row = frames.row(t);
    for (int64_t d = 0; d < frames.cols; ++d) {
      if (!IsUsableFeatureValue(row[d])) {
        return absl::InvalidArgumentError(absl::StrCat("frame ", t, ", dimension ", d, ": value ",
                                                       row[d], ": ", kFeatureValueRule));
      }
    }
  }
  return absl::OkStatus();
}

ModelShape ModelShape::Of(const DiagGmmModel& model) {
  ModelShape shape;
  shape.dim = model.dim();
  shape.state_offsets.assign(model.state_offsets().begin(), model.state_offsets().end());
  return shape;
}

absl::Status ValidateStatsRequest(const ModelShape* model, int64_t num_frames, int frame_dim,
                                  absl::Span<const StatsPair> pairs, const GmmStats& stats) {
  if (model == nullptr) {
    return absl::FailedPreconditionError("no model set for statistics (call SetModel first)");
  }
  if (frame_dim != model->dim) {
    return absl::InvalidArgumentError(absl::StrCat("frames have dimension ", frame_dim,
                                                   ", the model has dimension ", model->dim));
  }
  if (stats.dim != model->dim || stats.state_offsets != model->state_offsets || stats.num_sets < 1 ||
      stats.occupancy.size() != static_cast<size_t>(stats.num_rows()) ||
      stats.mean_acc.size() != static_cast<size_t>(stats.num_rows() * stats.dim) ||
      stats.var_acc.size() != static_cast<size_t>(stats.num_rows() * stats.dim)) {
    return absl::InvalidArgumentError(
        "statistics are not shaped for the model (use GmmStats::ForModel)");
  }
  if (pairs.empty()) {
    if (model->num_states() != 1 || stats.num_sets != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a model of ", model->num_states(),
          " states needs a frame-to-state alignment or state posteriors for its statistics"));
    }
    return absl::OkStatus();
  }
  const int64_t num_targets = static_cast<int64_t>(model->num_states()) * stats.num_sets;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const StatsPair& pair = pairs[i];
    if (pair.frame < 0 || pair.frame >= num_frames) {
      return absl::InvalidArgumentError(absl::StrCat("pair ", i, ": frame ", pair.frame,
                                                     " is outside the block's ", num_frames,
                                                     " frames"));
    }
    if (pair.target < 0 || pair.target >= num_targets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pair ", i, " (frame ", pair.frame, "): state ", pair.target % model->num_states(),
          pair.target >= num_targets ? " of a set beyond the statistics'" : "",
          " is out of range: the model has ", model->num_states(), " states and the statistics ",
          stats.num_sets, " sets"));
    }
    if (!std::isfinite(pair.weight)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pair ", i, " (frame ", pair.frame, "): weight ", pair.weight, " is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
