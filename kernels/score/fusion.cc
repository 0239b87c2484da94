#include "kernels/score/fusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"
// Header-only float32 exp/log that vectorise (kernels/cpu/internal); the
// fusion loops are the same shape as the CPU backend's log-sum-exp.
#include "kernels/core/fast_math.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log sum_i exp(terms[i]) in float64; -inf when every term is -inf.
double LogSumExp(absl::Span<const double> terms) {
  double max = kNegInf;
  for (double v : terms) max = std::max(max, v);
  if (max == kNegInf) return kNegInf;
  double sum = 0.0;
  for (double v : terms) sum += std::exp(v - max);
  return max + std::log(sum);
}

// Lanes of the vectorisable loops below: a fixed-width inner loop over
// arrays that GCC turns into SIMD without -ffast-math (which a reduction
// into one float would need).
constexpr int kLanes = 8;

// log sum_s exp(row[s]): the exponentials in float32 (FastExp, ~1e-7
// relative) summed in kLanes float lanes, the lanes in float64. Called per
// model and frame over every state (5000 exponentials), so std::exp in
// float64 made the posterior fusion of 10 models cost ~10 ms a chunk.
double RowLogSumExp(const float* row, int64_t cols) {
  float lane_max[kLanes];
  std::fill(lane_max, lane_max + kLanes, -std::numeric_limits<float>::infinity());
  int64_t s = 0;
  for (; s + kLanes <= cols; s += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane_max[k] = std::max(lane_max[k], row[s + k]);
  }
  float max = *std::max_element(lane_max, lane_max + kLanes);
  for (int64_t r = s; r < cols; ++r) max = std::max(max, row[r]);
  if (max == -std::numeric_limits<float>::infinity()) return kNegInf;
  float lane_sum[kLanes] = {};
  for (s = 0; s + kLanes <= cols; s += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane_sum[k] += cpu_internal::FastExp(row[s + k] - max);
  }
  double sum = 0.0;
  for (int k = 0; k < kLanes; ++k) sum += lane_sum[k];
  for (; s < cols; ++s) sum += cpu_internal::FastExp(row[s] - max);
  return max + std::log(sum);
}

// fused[s] = log sum_m exp(log_w[m] + rows[m][s]) for every state, in
// float32 with FastExp/FastLog, vectorised over states: per state the
// largest term, then the exponentials of the differences (each in (0, 1]).
// A model of weight 0 (log_w = -inf) adds exp(-87) ~ 1e-38 of the largest
// term, which no float32 result can show.
void WeightedLogSumExpRow(absl::Span<const float* const> rows, absl::Span<const double> log_w,
                          int64_t states, float* largest, float* sum, float* fused) {
  const int num_models = static_cast<int>(rows.size());
  for (int64_t s = 0; s < states; ++s) largest[s] = static_cast<float>(log_w[0]) + rows[0][s];
  for (int m = 1; m < num_models; ++m) {
    const float w = static_cast<float>(log_w[m]);
    const float* row = rows[m];
    for (int64_t s = 0; s < states; ++s) largest[s] = std::max(largest[s], w + row[s]);
  }
  std::fill(sum, sum + states, 0.0f);
  for (int m = 0; m < num_models; ++m) {
    const float w = static_cast<float>(log_w[m]);
    const float* row = rows[m];
    for (int64_t s = 0; s < states; ++s) sum[s] += cpu_internal::FastExp(w + row[s] - largest[s]);
  }
  for (int64_t s = 0; s < states; ++s) fused[s] = largest[s] + cpu_internal::FastLog(sum[s]);
}

absl::Status ValidateOptions(int num_models, const FusionOptions& options) {
  if (num_models < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("fusion needs >= 1 model, got %d", num_models));
  }
  if (!options.weights.empty() && static_cast<int>(options.weights.size()) != num_models) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fusion has %d weights for %d models (give one per model, or none for uniform)",
        options.weights.size(), num_models));
  }
  for (size_t m = 0; m < options.weights.size(); ++m) {
    if (!std::isfinite(options.weights[m]) || options.weights[m] <= 0.0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("fusion weight %d is %g; weights must be finite and > 0", m,
                          options.weights[m]));
    }
  }
  if (options.window_frames < 1 || options.window_frames > FusionOptions::kMaxWindowFrames) {
    return absl::InvalidArgumentError(
        absl::StrFormat("fusion window is %d frames; it must be in [1, %d]",
                        options.window_frames, FusionOptions::kMaxWindowFrames));
  }
  if (!std::isfinite(options.acoustic_scale) || options.acoustic_scale < 0.0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fusion acoustic scale is %g; it must be finite and >= 0", options.acoustic_scale));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view FusionMethodName(FusionMethod method) {
  switch (method) {
    case FusionMethod::kMax:
      return "max";
    case FusionMethod::kLogSumExp:
      return "logsumexp";
    case FusionMethod::kPosterior:
      return "posterior";
  }
  return "unknown";
}

absl::StatusOr<FusionMethod> ParseFusionMethod(absl::string_view name) {
  for (FusionMethod method :
       {FusionMethod::kMax, FusionMethod::kLogSumExp, FusionMethod::kPosterior}) {
    if (name == FusionMethodName(method)) return method;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown fusion method '%s' (expected max, logsumexp or posterior)", name));
}

absl::StatusOr<ModelFusion> ModelFusion::Create(int num_models, FusionOptions options) {
  if (absl::Status status = ValidateOptions(num_models, options); !status.ok()) return status;
  std::vector<double> log_weights(num_models, -std::log(static_cast<double>(num_models)));
  if (!options.weights.empty()) {
    double total = 0.0;
    for (double w : options.weights) total += w;
    for (int m = 0; m < num_models; ++m) log_weights[m] = std::log(options.weights[m] / total);
  }
  return ModelFusion(num_models, std::move(options), std::move(log_weights));
}

ModelFusion::ModelFusion(int num_models, FusionOptions options, std::vector<double> log_weights)
    : num_models_(num_models), options_(std::move(options)), log_weights_(std::move(log_weights)) {
  if (options_.method == FusionMethod::kPosterior) {
    window_.assign(static_cast<size_t>(options_.window_frames) * num_models_, 0.0);
  }
}

void ModelFusion::AdvancePosteriorWindow(const double* totals_t, double* weights_t) {
  const int num_models = num_models_;
  double* slot = &window_[static_cast<size_t>(window_next_) * num_models];
  for (int m = 0; m < num_models; ++m) {
    slot[m] = log_weights_[m] + options_.acoustic_scale * totals_t[m];
  }
  const double norm = LogSumExp(absl::MakeConstSpan(slot, num_models));
  for (int m = 0; m < num_models; ++m) slot[m] = std::exp(slot[m] - norm);
  window_next_ = (window_next_ + 1) % options_.window_frames;
  window_size_ = std::min(window_size_ + 1, options_.window_frames);

  // Summed afresh every frame (window x models additions) so that a long
  // stream accumulates no rounding drift.
  std::fill(weights_t, weights_t + num_models, 0.0);
  for (int k = 0; k < window_size_; ++k) {
    const double* p = &window_[static_cast<size_t>(k) * num_models];
    for (int m = 0; m < num_models; ++m) weights_t[m] += p[m];
  }
  for (int m = 0; m < num_models; ++m) weights_t[m] /= window_size_;
}

absl::Status ModelFusion::NextLogWeights(absl::Span<const double> frame_totals, int64_t frames,
                                         std::vector<double>* log_weights, FusedScores* out) {
  const int num_models = num_models_;
  const bool posterior = options_.method == FusionMethod::kPosterior;
  if (frames < 0 || (!frame_totals.empty() &&
                     static_cast<int64_t>(frame_totals.size()) != frames * num_models) ||
      (posterior && frame_totals.empty() && frames > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fusion of %d models over %d frames was given %d frame totals", num_models, frames,
        frame_totals.size()));
  }
  const bool weighted = options_.method != FusionMethod::kMax;
  log_weights->assign(frames * num_models, 0.0);
  out->model_weights.assign(weighted ? frames * num_models : 0, 0.0f);
  if (!weighted) return absl::OkStatus();
  std::vector<double> weights_t(num_models);
  for (int64_t t = 0; t < frames; ++t) {
    double* log_w = log_weights->data() + t * num_models;
    if (posterior) {
      AdvancePosteriorWindow(&frame_totals[t * num_models], weights_t.data());
      for (int m = 0; m < num_models; ++m) {
        log_w[m] = weights_t[m] > 0.0 ? std::log(weights_t[m]) : kNegInf;
      }
    } else {
      std::copy(log_weights_.begin(), log_weights_.end(), log_w);
    }
    for (int m = 0; m < num_models; ++m) {
      out->model_weights[t * num_models + m] = static_cast<float>(std::exp(log_w[m]));
    }
  }
  return absl::OkStatus();
}

void ModelFusion::SetDominance(absl::Span<const int> winners, FusedScores* out) const {
  std::vector<int64_t> dominated(num_models_, 0);
  for (int winner : winners) ++dominated[winner];
  out->dominant_model = 0;
  out->model_share.assign(num_models_, 0.0f);
  for (int m = 0; m < num_models_; ++m) {
    if (!winners.empty()) out->model_share[m] = static_cast<float>(dominated[m]) / winners.size();
    if (dominated[m] > dominated[out->dominant_model]) out->dominant_model = m;
  }
}

absl::Status ModelFusion::Fuse(absl::Span<const ConstMatrixView> loglikes, FusedScores* out) {
  if (static_cast<int>(loglikes.size()) != num_models_) {
    return absl::InvalidArgumentError(absl::StrFormat("fusion of %d models was given %d matrices",
                                                      num_models_, loglikes.size()));
  }
  const int64_t frames = loglikes[0].rows;
  const int64_t states = loglikes[0].cols;
  for (const ConstMatrixView& m : loglikes) {
    if (m.rows != frames || m.cols != states) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "fusion inputs differ in shape: %dx%d vs %dx%d", frames, states, m.rows, m.cols));
    }
  }
  const int num_models = num_models_;
  const bool weighted = options_.method != FusionMethod::kMax;
  std::vector<double> totals;
  if (options_.method == FusionMethod::kPosterior) {
    totals.resize(frames * num_models);
    for (int64_t t = 0; t < frames; ++t) {
      for (int m = 0; m < num_models; ++m) {
        totals[t * num_models + m] = RowLogSumExp(loglikes[m].row(t), states);
      }
    }
  }
  std::vector<double> log_weights;
  GMM_RETURN_IF_ERROR(NextLogWeights(totals, frames, &log_weights, out));

  out->loglikes.Resize(frames, states);
  out->frame_totals.clear();
  std::vector<int> winners(states > 0 ? frames : 0);
  std::vector<const float*> rows(num_models);
  std::vector<float> largest(weighted ? states : 0), sums(weighted ? states : 0);
  for (int64_t t = 0; t < frames; ++t) {
    const absl::Span<const double> log_w(log_weights.data() + t * num_models, num_models);
    float* fused = out->loglikes.row(t);
    for (int m = 0; m < num_models; ++m) rows[m] = loglikes[m].row(t);
    if (weighted) {
      WeightedLogSumExpRow(rows, log_w, states, largest.data(), sums.data(), fused);
    } else {
      std::copy(rows[0], rows[0] + states, fused);
      for (int m = 1; m < num_models; ++m) {
        for (int64_t s = 0; s < states; ++s) fused[s] = std::max(fused[s], rows[m][s]);
      }
    }
    if (states == 0) continue;
    int64_t best_state = 0;
    for (int64_t s = 1; s < states; ++s) {
      if (fused[s] > fused[best_state]) best_state = s;
    }
    double winner_term = kNegInf;
    for (int m = 0; m < num_models; ++m) {
      const double term = log_w[m] + rows[m][best_state];
      if (term > winner_term) {
        winner_term = term;
        winners[t] = m;
      }
    }
  }
  SetDominance(winners, out);
  return absl::OkStatus();
}

}  // namespace gmmscore
