#include "kernels/train/online_adaptation.h"

#include <cblas.h>

#include <cmath>
#include <mutex>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/map_update.h"
#include "kernels/train/natural_gmm.h"

namespace gmmscore {
namespace {

absl::Status CheckCount(const char* field, double value) {
  if (!std::isfinite(value) || value < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %g must be finite and >= 0", field, value));
  }
  return absl::OkStatus();
}

// Checks the pairs against the chunk and model before anything is added
// (the decoder path checked them already; scores' pairs are made in range).
absl::Status CheckPairs(absl::Span<const StatsPair> pairs, int64_t frames, int states) {
  for (size_t i = 0; i < pairs.size(); ++i) {
    const StatsPair& p = pairs[i];
    if (p.frame < 0 || p.frame >= frames || p.target < 0 || p.target >= states ||
        !std::isfinite(p.weight) || p.weight < 0.0f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "adaptation pair %d (frame %d, state %d, weight %g) is outside the chunk's %d frames, "
          "the model's %d states, or not a weight",
          i, p.frame, p.target, p.weight, frames, states));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string AdaptationMethodName(AdaptationMethod method) {
  return method == AdaptationMethod::kFmllr ? "fmllr" : "map";
}

absl::Status ValidateOnlineAdaptation(const OnlineAdaptationOptions& options,
                                      const DiagGmmModel& model) {
  if (options.start_after_frames <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "start_after_frames %d must be at least 1", options.start_after_frames));
  }
  if (options.update_every_frames < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "update_every_frames %d must be >= 0 (0: one update only)", options.update_every_frames));
  }
  GMM_RETURN_IF_ERROR(CheckCount("map_tau", options.map_tau));
  GMM_RETURN_IF_ERROR(CheckCount("fmllr min_count", options.fmllr.min_count));
  GMM_RETURN_IF_ERROR(CheckCount("fmllr min_count_full", options.fmllr.min_count_full));
  return ValidatePosteriorPolicy(options.posteriors, model.num_states());
}

absl::StatusOr<std::unique_ptr<OnlineAdapter>> OnlineAdapter::Create(
    std::shared_ptr<const DiagGmmModel> model, const OnlineAdaptationOptions& options,
    std::shared_ptr<const FmllrAccumulator> fmllr_accumulator) {
  if (model == nullptr) return absl::InvalidArgumentError("no model to adapt");
  GMM_RETURN_IF_ERROR(ValidateOnlineAdaptation(options, *model));
  // Adapters run on many threads at once (a daemon's workers), each with
  // small matrices: OpenBLAS's own threads would only contend. On the H100
  // host, 369 adapting streams took 4.4 cores with them, against the 0.7
  // that 20 us a frame on one thread (online_adaptation_bench) predicts.
  // Process-wide, as the CPU backends set it.
  static std::once_flag single_threaded_blas;
  std::call_once(single_threaded_blas, [] { openblas_set_num_threads(1); });
  if (fmllr_accumulator != nullptr && fmllr_accumulator->dim() != model->dim()) {
    return absl::InvalidArgumentError("the fMLLR accumulator is for another model");
  }
  return std::unique_ptr<OnlineAdapter>(
      new OnlineAdapter(std::move(model), options, std::move(fmllr_accumulator)));
}

OnlineAdapter::OnlineAdapter(std::shared_ptr<const DiagGmmModel> model,
                             const OnlineAdaptationOptions& options,
                             std::shared_ptr<const FmllrAccumulator> fmllr_accumulator)
    : model_(std::move(model)),
      options_(options),
      shape_(ModelShape::Of(*model_)),
      fmllr_accumulator_(std::move(fmllr_accumulator)),
      fmllr_stats_(FmllrStats::ForDim(model_->dim())),
      next_update_(options.start_after_frames) {}

absl::Status OnlineAdapter::UseFmllrAccumulator(std::shared_ptr<const FmllrAccumulator> accumulator) {
  if (accumulator == nullptr || accumulator->dim() != model_->dim()) {
    return absl::InvalidArgumentError("the fMLLR accumulator is missing or for another model");
  }
  fmllr_accumulator_ = std::move(accumulator);
  return absl::OkStatus();
}

absl::Status OnlineAdapter::AddChunk(ConstMatrixView frames, absl::Span<const StatsPair> pairs) {
  if (frames.rows > 0 && frames.cols != model_->dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chunk frames have %d values; the adapting model has dimension %d", frames.cols,
        model_->dim()));
  }
  GMM_RETURN_IF_ERROR(CheckPairs(pairs, frames.rows, model_->num_states()));
  // Empty pairs mean "every frame, weight 1" to the accumulators (a UBM):
  // here they mean that nothing of this chunk counts.
  if (!pairs.empty()) {
    if (options_.method == AdaptationMethod::kFmllr) {
      GMM_RETURN_IF_ERROR(ValidateFmllrRequest(shape_, frames, pairs, fmllr_stats_));
      const int32_t base = static_cast<int32_t>(pending_rows_);
      pending_frames_.insert(pending_frames_.end(), frames.row(0), frames.row(0) + frames.rows * frames.cols);
      for (StatsPair p : pairs) {
        p.frame += base;
        pending_pairs_.push_back(p);
      }
      pending_rows_ += frames.rows;
      if (pending_rows_ >= kFlushFrames) GMM_RETURN_IF_ERROR(FlushFmllr());
    } else {
      GMM_RETURN_IF_ERROR(AddMapStats(frames, pairs));
    }
  }
  frames_ += frames.rows;
  return absl::OkStatus();
}

absl::Status OnlineAdapter::AddGathered(const FmllrStats& stats) {
  if (options_.method != AdaptationMethod::kFmllr) {
    return absl::InvalidArgumentError("gathered fMLLR statistics given to a MAP adapter");
  }
  return fmllr_stats_.Add(stats);
}

absl::Status OnlineAdapter::FlushFmllr() {
  if (pending_pairs_.empty()) return absl::OkStatus();
  if (fmllr_accumulator_ == nullptr) {
    fmllr_accumulator_ = std::make_shared<const FmllrAccumulator>(*model_);
  }
  const ConstMatrixView frames(pending_frames_.data(), pending_rows_, model_->dim());
  absl::Status added = fmllr_accumulator_->Accumulate(frames, pending_pairs_, &fmllr_stats_).status();
  pending_frames_.clear();
  pending_pairs_.clear();
  pending_rows_ = 0;
  return added;
}

// Gaussian posteriors within each pair's state from the scoring form in
// float64 (loglik = K + u.y + v.y^2, y = x - centre), as the statistics
// backends compute them; sums of raw frames.
absl::Status OnlineAdapter::AddMapStats(ConstMatrixView frames, absl::Span<const StatsPair> pairs) {
  const int dim = model_->dim();
  const absl::Span<const float> center = model_->center();
  std::vector<double> y(dim), loglik(model_->max_gaussians_per_state());
  for (const StatsPair& p : pairs) {
    if (p.weight <= 0.0f) continue;
    const float* x = frames.row(p.frame);
    for (int d = 0; d < dim; ++d) y[d] = static_cast<double>(x[d]) - center[d];
    const int64_t first = model_->state_offsets()[p.target];
    const int count = model_->num_gaussians_in_state(p.target);
    double best = -INFINITY;
    for (int i = 0; i < count; ++i) {
      const float* u = model_->means_invvars(first + i);
      const float* v = model_->half_neg_inv_vars(first + i);
      double l = model_->gconst(first + i);
      for (int d = 0; d < dim; ++d) l += y[d] * (u[d] + v[d] * y[d]);
      loglik[i] = l;
      best = std::max(best, l);
    }
    double total = 0.0;
    for (int i = 0; i < count; ++i) total += std::exp(loglik[i] - best);
    for (int i = 0; i < count; ++i) {
      const double gamma = p.weight * std::exp(loglik[i] - best) / total;
      if (gamma <= 0.0) continue;
      MeanSums& sums = mean_sums_[first + i];
      if (sums.sum.empty()) sums.sum.assign(dim, 0.0);
      sums.occupancy += gamma;
      for (int d = 0; d < dim; ++d) sums.sum[d] += gamma * x[d];
    }
    map_count_ += p.weight;
  }
  return absl::OkStatus();
}

absl::StatusOr<AdaptationUpdate> OnlineAdapter::Update() {
  absl::StatusOr<AdaptationUpdate> update =
      options_.method == AdaptationMethod::kFmllr ? UpdateFmllr() : UpdateMapMeans();
  if (!update.ok()) return update.status();
  update->version = ++version_;
  update->method = options_.method;
  update->frames = frames_;
  // The next update is due update_every_frames after this one's frames
  // (not after the last due point: chunks do not end on it).
  next_update_ = options_.update_every_frames > 0 ? frames_ + options_.update_every_frames : 0;
  return update;
}

absl::StatusOr<AdaptationUpdate> OnlineAdapter::UpdateFmllr() {
  GMM_RETURN_IF_ERROR(FlushFmllr());
  GMM_ASSIGN_OR_RETURN(FmllrResult fmllr, EstimateFmllr(fmllr_stats_, options_.fmllr));
  AdaptationUpdate update;
  update.count = fmllr.report.count;
  update.gain_per_frame = fmllr.report.gain_per_frame;
  update.mode = std::string(FmllrModeName(fmllr.report.mode));
  update.reason = fmllr.report.reason;
  const int dim = model_->dim();
  std::vector<float> values(fmllr.transform.begin(), fmllr.transform.end());
  GMM_ASSIGN_OR_RETURN(FeatureTransform transform, FeatureTransform::Create(dim, dim + 1, values));
  update.transform = std::make_shared<const FeatureTransform>(std::move(transform));
  update.transform_values = std::move(fmllr.transform);
  return update;
}

// Means only, as adapt-map --update means: MapUpdate over the statistics
// gathered (the Gaussians never touched keep their means). The gain is the
// auxiliary function's: sum over Gaussians and dimensions of
// (mu' - mu) s1 / var - occ (mu'^2 - mu^2) / (2 var), per unit of count.
absl::StatusOr<AdaptationUpdate> OnlineAdapter::UpdateMapMeans() const {
  const int dim = model_->dim();
  GmmStats stats = GmmStats::ForModel(*model_);
  stats.flags = kGmmMeans;
  for (const auto& [g, sums] : mean_sums_) {
    stats.occupancy[g] = sums.occupancy;
    std::copy(sums.sum.begin(), sums.sum.end(), stats.mean_acc.begin() + g * dim);
  }
  stats.total_weight = map_count_;
  const NaturalGmm before = NaturalGmm::FromModel(*model_);
  MapOptions map;
  map.mean_tau = options_.map_tau;
  map.update = kGmmMeans;
  GMM_ASSIGN_OR_RETURN(NaturalGmm after, MapUpdate(before, stats, map));
  double gain = 0.0;
  for (int s = 0; s < before.num_states(); ++s) {
    const int64_t first = model_->state_offsets()[s];
    for (int i = 0; i < before.states[s].num_gaussians(); ++i) {
      auto it = mean_sums_.find(first + i);
      if (it == mean_sums_.end()) continue;
      const MeanSums& sums = it->second;
      for (int d = 0; d < dim; ++d) {
        const size_t k = static_cast<size_t>(i) * dim + d;
        const double old_mean = before.states[s].means[k];
        const double new_mean = after.states[s].means[k];
        const double var = before.states[s].variances[k];
        gain += ((new_mean - old_mean) * sums.sum[d] -
                 0.5 * sums.occupancy * (new_mean * new_mean - old_mean * old_mean)) /
                var;
      }
    }
  }
  GMM_ASSIGN_OR_RETURN(DiagGmmModel adapted, after.ToModel());
  AdaptationUpdate update;
  update.count = map_count_;
  update.gain_per_frame = map_count_ > 0.0 ? gain / map_count_ : 0.0;
  update.mode = "map-means";
  update.model = std::make_shared<const DiagGmmModel>(std::move(adapted));
  return update;
}

}  // namespace gmmscore
