#include "kernels/score/scoring_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/core/feature_values.h"

namespace gmmscore {

absl::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kFused8: return "fused8";
    case Algorithm::kFused16: return "fused16";
    case Algorithm::kFused32: return "fused32";
    case Algorithm::kFused8x2: return "fused8x2";
    case Algorithm::kFused8x4: return "fused8x4";
    case Algorithm::kSplit8: return "split8";
    case Algorithm::kTf32x3: return "tf32x3";
    case Algorithm::kWgmma: return "wgmma";
    case Algorithm::kWgmmaHalf: return "wgmma_f16";
    case Algorithm::kGemm: return "gemm";
  }
  return "unknown";
}

absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view name) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kFused8, Algorithm::kFused16, Algorithm::kFused32,
                       Algorithm::kFused8x2, Algorithm::kFused8x4, Algorithm::kSplit8, Algorithm::kTf32x3, Algorithm::kWgmma,
                       Algorithm::kWgmmaHalf, Algorithm::kGemm}) {
    if (name == AlgorithmName(a)) return a;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown algorithm '", name,
      "' (expected auto, fused8, fused16, fused32, fused8x2, fused8x4, split8, tf32x3, wgmma, wgmma_f16 or gemm)"));
}

absl::string_view PrecisionName(Precision precision) {
  return precision == Precision::kFast ? "fast" : "exact";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  if (name == "exact" || name == "fp32") return Precision::kExact;
  if (name == "fast") return Precision::kFast;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", name, "' (exact, fp32 = exact, or fast)"));
}

namespace {

// The most Gaussians one state of `model` mixes, over all streams.
int MaxTiedGaussiansPerState(const TiedMixtureModel& model) {
  int most = 0;
  for (int c = 0; c < model.num_codebooks(); ++c) {
    int size = 0;
    for (int f = 0; f < model.num_streams(); ++f) size += model.codebook_size(c, f);
    most = std::max(most, size);
  }
  return most;
}

absl::Status ValidateFeaturesOfDim(int dim, ConstMatrixView features) {
  if (features.cols != dim) {
    return absl::InvalidArgumentError(absl::StrCat("features have dimension ", features.cols,
                                                   ", the model expects ", dim));
  }
  if (features.rows < 0) return absl::InvalidArgumentError("negative frame count");
  for (int64_t t = 0; t < features.rows; ++t) {
    const float* row = features.row(t);
    for (int64_t d = 0; d < features.cols; ++d) {
      if (!IsUsableFeatureValue(row[d])) {
        return absl::InvalidArgumentError(absl::StrCat("feature value at frame ", t, ", dimension ",
                                                       d, " is ", row[d], "; ", kFeatureValueRule));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

PreparedModel::PreparedModel(std::shared_ptr<const DiagGmmModel> model) : model_(std::move(model)) {
  if (model_ == nullptr) return;
  dim_ = model_->dim();
  num_states_ = model_->num_states();
  gaussians_per_frame_ = model_->num_gaussians();
  max_gaussians_per_state_ = model_->max_gaussians_per_state();
  host_bytes_ = model_->ByteSize();
}

PreparedModel::PreparedModel(std::shared_ptr<const TiedMixtureModel> model) : tied_(std::move(model)) {
  if (tied_ == nullptr) return;
  dim_ = tied_->dim();
  num_states_ = tied_->num_states();
  gaussians_per_frame_ = tied_->total_gaussians();
  max_gaussians_per_state_ = MaxTiedGaussiansPerState(*tied_);
  host_bytes_ = tied_->ByteSize();
}

absl::StatusOr<std::shared_ptr<const PreparedModel>> ScoringBackend::PrepareTied(
    std::shared_ptr<const TiedMixtureModel> model) {
  return absl::UnimplementedError(
      absl::StrCat("the ", name(), " backend cannot score tied-mixture models"));
}

void DetachFromBlocks(ScoreResult* result) {
  if (result->loglikes.on_block()) result->loglikes = FloatMatrix(result->loglikes);  // a deep copy
  if (result->half.has_value() && result->half->values.on_block()) {
    result->half->values = BlockArray<uint16_t>(result->half->values);
  }
}

absl::Status ValidateWindowShape(const ScoreWindow& job) {
  if (job.model == nullptr || job.result == nullptr) {
    return absl::InvalidArgumentError("batch job without a model or a result");
  }
  const int dim = job.model->dim();
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

absl::Status ValidateFusionJobs(absl::Span<const ScoreWindow> jobs,
                                absl::Span<const FusionJob> fusions) {
  std::vector<bool> used(jobs.size(), false);
  for (size_t f = 0; f < fusions.size(); ++f) {
    const FusionJob& fusion = fusions[f];
    if (fusion.fusion == nullptr || fusion.out == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("fusion ", f, " has no state or no output"));
    }
    if (static_cast<int>(fusion.windows.size()) != fusion.fusion->num_models()) {
      return absl::InvalidArgumentError(absl::StrCat("fusion ", f, " of ", fusion.fusion->num_models(),
                                                     " models names ", fusion.windows.size(), " windows"));
    }
    for (int w : fusion.windows) {
      if (w < 0 || w >= static_cast<int>(jobs.size()) || jobs[w].model == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("fusion ", f, " names window ", w, " of ", jobs.size()));
      }
      if (used[w]) return absl::InvalidArgumentError(absl::StrCat("window ", w, " is in two fusions"));
      if (!jobs[w].select.dense()) {
        return absl::InvalidArgumentError(absl::StrCat("fused window ", w, " asks for a state selection"));
      }
      used[w] = true;
      const ScoreWindow& first = jobs[fusion.windows.front()];
      if (jobs[w].features.rows != first.features.rows ||
          jobs[w].model->num_states() != first.model->num_states()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fusion ", f, " mixes windows of ", first.features.rows, " x ", first.model->num_states(), " and ",
            jobs[w].features.rows, " x ", jobs[w].model->num_states(), " scores"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ScoringBackend::ScoreFusedBatch(absl::Span<const ScoreWindow> jobs,
                                             absl::Span<const FusionJob> fusions,
                                             const ScoreOptions& options) {
  if (absl::Status status = ValidateFusionJobs(jobs, fusions); !status.ok()) return status;
  // Fused here from their float32 scores: a backend that encodes halves
  // (ScoreWindow::half_from_best) must not encode these.
  std::vector<ScoreWindow> windows(jobs.begin(), jobs.end());
  for (const FusionJob& fusion : fusions) {
    for (int w : fusion.windows) windows[w].half_from_best = false;
  }
  if (absl::Status status = ScoreBatch(windows, options); !status.ok()) return status;
  std::vector<ConstMatrixView> views;
  for (const FusionJob& fusion : fusions) {
    views.clear();
    for (int w : fusion.windows) views.push_back(jobs[w].result->loglikes.view());
    if (absl::Status status = fusion.fusion->Fuse(views, fusion.out); !status.ok()) return status;
    if (fusion.frame_totals) fusion.out->frame_totals = ComputeFrameTotals(fusion.out->loglikes);
  }
  for (const FusionJob& fusion : fusions) {
    if (fusion.model_scores) continue;
    for (int w : fusion.windows) *jobs[w].result = ScoreResult{};
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> ScoringBackend::CreateFmllrGather(
    const PreparedModel&, const PosteriorPolicy&) {
  return absl::UnimplementedError(
      absl::StrCat("backend ", name(), " does not gather fMLLR statistics while scoring"));
}

absl::Status ScoringBackend::ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options) {
  for (const ScoreWindow& job : jobs) {
    if (job.gather != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "backend ", name(), " does not gather fMLLR statistics; a window asked it to"));
    }
  }
  for (const ScoreWindow& job : jobs) {
    if (absl::Status status = ValidateWindowShape(job); !status.ok()) return status;
    if (absl::Status status = ValidateFeatures(*job.model, job.features); !status.ok()) return status;
  }
  for (const ScoreWindow& job : jobs) {
    job.result->sparse.reset();
    job.result->half.reset();
  }
  // Consecutive windows of one model (a scheduler's group of many streams'
  // chunks) are packed into one matrix, transformed on the way, and scored
  // by one Score call: one GEMM over all their frames instead of one per
  // chunk. A lone window without a transform is scored where it lies.
  FloatMatrix packed;
  ScoreResult run_result;
  for (size_t first = 0; first < jobs.size();) {
    size_t end = first + 1;
    while (end < jobs.size() && jobs[end].model == jobs[first].model) ++end;
    const PreparedModel& model = *jobs[first].model;
    if (end == first + 1 && jobs[first].transform == nullptr) {
      if (absl::Status status = Score(model, jobs[first].features, options, jobs[first].result); !status.ok()) {
        return status;
      }
      first = end;
      continue;
    }
    int64_t frames = 0;
    for (size_t j = first; j < end; ++j) frames += jobs[j].features.rows;
    const int dim = model.dim();
    packed.Resize(frames, dim);
    int64_t row = 0;
    for (size_t j = first; j < end; ++j) {
      const ConstMatrixView& features = jobs[j].features;
      if (jobs[j].transform != nullptr) {
        jobs[j].transform->ApplyUnchecked(features, packed.row(row));
      } else {
        for (int64_t t = 0; t < features.rows; ++t) {
          std::memcpy(packed.row(row + t), features.row(t), sizeof(float) * dim);
        }
      }
      row += features.rows;
    }
    if (absl::Status status = Score(model, packed.view(), options, &run_result); !status.ok()) return status;
    const int64_t states = run_result.loglikes.cols();
    row = 0;
    for (size_t j = first; j < end; ++j) {
      const int64_t rows = jobs[j].features.rows;
      ScoreResult& result = *jobs[j].result;
      result.loglikes.Resize(rows, states);
      if (rows > 0) std::memcpy(result.loglikes.data(), run_result.loglikes.row(row), sizeof(float) * rows * states);
      result.frame_totals.clear();
      if (!run_result.frame_totals.empty()) {
        result.frame_totals.assign(run_result.frame_totals.begin() + row,
                                   run_result.frame_totals.begin() + row + rows);
      }
      row += rows;
    }
    first = end;
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatures(const DiagGmmModel& model, ConstMatrixView features) {
  return ValidateFeaturesOfDim(model.dim(), features);
}

absl::Status ValidateFeatures(const TiedMixtureModel& model, ConstMatrixView features) {
  return ValidateFeaturesOfDim(model.dim(), features);
}

absl::Status ValidateFeatures(const PreparedModel& model, ConstMatrixView features) {
  return ValidateFeaturesOfDim(model.dim(), features);
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
