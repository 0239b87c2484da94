#include "kernels/score/scoring_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gmmscore {

absl::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kFused8: return "fused8";
    case Algorithm::kFused16: return "fused16";
    case Algorithm::kFused32: return "fused32";
    case Algorithm::kSplit8: return "split8";
    case Algorithm::kTf32x3: return "tf32x3";
    case Algorithm::kGemm: return "gemm";
  }
  return "unknown";
}

absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view name) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kFused8, Algorithm::kFused16, Algorithm::kFused32,
                       Algorithm::kSplit8, Algorithm::kTf32x3, Algorithm::kGemm}) {
    if (name == AlgorithmName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown algorithm '", name, "' (expected auto, fused8, fused16, fused32, split8, tf32x3 or gemm)"));
}

absl::Status ValidateWindowShape(const ScoreWindow& job) {
  if (job.model == nullptr || job.result == nullptr) {
    return absl::InvalidArgumentError("batch job without a model or a result");
  }
  const int dim = job.model->model().dim();
  if (job.features.cols != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("features have dimension ", job.features.cols, ", the model expects ", dim));
  }
  if (job.transform != nullptr && job.transform->dim() != dim) {
    return absl::InvalidArgumentError(absl::StrCat("the feature transform has dimension ",
                                                   job.transform->dim(), ", the model ", dim));
  }
  return absl::OkStatus();
}

absl::Status ScoringBackend::ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) {
  for (const ScoreWindow& job : jobs) {
    if (absl::Status status = ValidateWindowShape(job); !status.ok()) return status;
    if (absl::Status status = ValidateFeatures(job.model->model(), job.features); !status.ok()) return status;
  }
  FloatMatrix transformed;
  for (const ScoreWindow& job : jobs) {
    ConstMatrixView features = job.features;
    if (job.transform != nullptr) {
      transformed.Resize(features.rows, features.cols);
      job.transform->ApplyUnchecked(features, transformed.data());
      features = transformed.view();
    }
    if (absl::Status status = Score(*job.model, features, options, job.result); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatures(const DiagGmmModel& model, ConstMatrixView features) {
  if (features.cols != model.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("features have dimension ", features.cols,
                                                   ", the model expects ", model.dim()));
  }
  if (features.rows < 0) return absl::InvalidArgumentError("negative frame count");
  for (int64_t t = 0; t < features.rows; ++t) {
    const float* row = features.row(t);
    for (int64_t d = 0; d < features.cols; ++d) {
      if (!std::isfinite(row[d])) {
        return absl::InvalidArgumentError(absl::StrCat("feature value at frame ", t, ", dimension ",
                                                       d, " is ", row[d], ", not finite"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<float> ComputeFrameTotals(const FloatMatrix& loglikes) {
  std::vector<float> totals(loglikes.rows());
  for (int64_t t = 0; t < loglikes.rows(); ++t) {
    const float* row = loglikes.row(t);
    const float max = *std::max_element(row, row + loglikes.cols());
    double sum = 0.0;
    for (int64_t s = 0; s < loglikes.cols(); ++s) sum += std::exp(static_cast<double>(row[s]) - max);
    totals[t] = static_cast<float>(max + std::log(sum));
  }
  return totals;
}

}  // namespace gmmscore
