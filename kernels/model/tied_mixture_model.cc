#include "kernels/model/tied_mixture_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr double kLog2Pi = 1.8378770664093454835606594728112;  // log(2 pi)

}  // namespace

int64_t TiedMixtureModel::total_gaussians() const {
  int64_t total = 0;
  for (int f = 0; f < num_streams(); ++f) total += num_gaussians(f);
  return total;
}

absl::StatusOr<TiedMixtureModel> TiedMixtureModel::SubsetStates(absl::Span<const int32_t> states) const {
  if (states.empty()) return absl::InvalidArgumentError("no states to keep");
  std::vector<int> new_codebook(num_codebooks_, -1), kept_codebooks;
  for (const int32_t s : states) {
    if (s < 0 || s >= num_states()) {
      return absl::InvalidArgumentError(absl::StrCat("state ", s, " is not one of the model's ", num_states()));
    }
    int& c = new_codebook[state_codebook_[s]];
    if (c < 0) {
      c = static_cast<int>(kept_codebooks.size());
      kept_codebooks.push_back(state_codebook_[s]);
    }
  }
  TiedMixtureModel out;
  out.dim_ = dim_;
  out.num_codebooks_ = static_cast<int>(kept_codebooks.size());
  out.streams_ = streams_;
  out.stream_weights_ = stream_weights_;
  out.centers_ = centers_;
  const int num_streams = this->num_streams();
  out.codebook_offsets_.assign(num_streams, std::vector<int64_t>{0});
  out.params_.resize(num_streams);
  for (int f = 0; f < num_streams; ++f) {
    const int64_t cols = 1 + 2 * streams_[f].dim;
    for (const int c : kept_codebooks) {
      out.codebook_offsets_[f].push_back(out.codebook_offsets_[f].back() + codebook_size(c, f));
      out.max_codebook_size_ = std::max(out.max_codebook_size_, codebook_size(c, f));
      out.params_[f].insert(out.params_[f].end(), params_[f].begin() + codebook_begin(c, f) * cols,
                            params_[f].begin() + codebook_end(c, f) * cols);
    }
  }
  out.weight_offsets_ = {0};
  for (const int32_t s : states) {
    out.state_codebook_.push_back(new_codebook[state_codebook_[s]]);
    for (int f = 0; f < num_streams; ++f) {
      const absl::Span<const float> w = log_weights(s, f);
      out.log_weights_.insert(out.log_weights_.end(), w.begin(), w.end());
      out.weight_offsets_.push_back(static_cast<int64_t>(out.log_weights_.size()));
    }
  }
  return out;
}

NaturalGaussian TiedMixtureModel::Natural(int f, int64_t g) const {
  const int dim = streams_[f].dim;
  const float* row = &params_[f][g * (1 + 2 * dim)];
  NaturalGaussian out;
  out.weight = 1.0;
  out.mean.resize(dim);
  out.variance.resize(dim);
  for (int d = 0; d < dim; ++d) {
    const double var = -1.0 / (2.0 * row[1 + dim + d]);
    out.variance[d] = var;
    out.mean[d] = row[1 + d] * var + centers_[f][d];
  }
  return out;
}

int64_t TiedMixtureModel::ByteSize() const {
  int64_t bytes = static_cast<int64_t>(log_weights_.size() * sizeof(float) +
                                       weight_offsets_.size() * sizeof(int64_t) +
                                       state_codebook_.size() * sizeof(int));
  for (int f = 0; f < num_streams(); ++f) {
    bytes += static_cast<int64_t>(params_[f].size() * sizeof(float) +
                                  centers_[f].size() * sizeof(float) +
                                  codebook_offsets_[f].size() * sizeof(int64_t));
  }
  return bytes;
}

int64_t TiedMixtureModel::UntiedByteSize() const {
  int64_t floats = 0;
  for (int s = 0; s < num_states(); ++s) {
    for (int f = 0; f < num_streams(); ++f) {
      floats += static_cast<int64_t>(codebook_size(state_codebook_[s], f)) * (1 + 2 * streams_[f].dim);
    }
  }
  return floats * static_cast<int64_t>(sizeof(float));
}

absl::StatusOr<DiagGmmModel> TiedMixtureModel::ToDiagGmmModel() const {
  if (num_streams() != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "a model with ", num_streams(),
        " feature streams has no single-mixture (DiagGmmModel) form; score it as a tied-mixture model"));
  }
  if (stream_weights_[0] != 1.0f) {
    return absl::UnimplementedError("a stream weight other than 1 has no DiagGmmModel form");
  }
  const int dim = streams_[0].dim;
  DiagGmmModelBuilder builder(dim);
  std::vector<double> weights, means, variances;
  for (int s = 0; s < num_states(); ++s) {
    const int c = state_codebook_[s];
    const absl::Span<const float> log_w = log_weights(s, 0);
    weights.clear();
    means.clear();
    variances.clear();
    for (int g = 0; g < codebook_size(c, 0); ++g) {
      if (std::isinf(log_w[g])) continue;  // weight 0
      weights.push_back(std::exp(static_cast<double>(log_w[g])));
      const NaturalGaussian natural = Natural(0, codebook_begin(c, 0) + g);
      means.insert(means.end(), natural.mean.begin(), natural.mean.end());
      variances.insert(variances.end(), natural.variance.begin(), natural.variance.end());
    }
    if (absl::Status status = builder.AddState(weights, means, variances); !status.ok()) {
      return PrefixStatus("converting to a DiagGmmModel", status);
    }
  }
  return std::move(builder).Build();
}

TiedMixtureModelBuilder::TiedMixtureModelBuilder(std::vector<FeatureStream> streams)
    : streams_(std::move(streams)),
      stream_weights_(streams_.size(), 1.0f),
      means_(streams_.size()),
      variances_(streams_.size()) {}

absl::StatusOr<int> TiedMixtureModelBuilder::AddCodebook(
    absl::Span<const CodebookStreamParams> streams) {
  const int codebook = num_codebooks();
  if (streams.size() != streams_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("codebook ", codebook, ": has ", streams.size(),
                                                   " streams, the model has ", streams_.size()));
  }
  std::vector<int> sizes(streams_.size());
  for (size_t f = 0; f < streams_.size(); ++f) {
    const int dim = streams_[f].dim;
    const CodebookStreamParams& params = streams[f];
    if (dim <= 0 || params.means.empty() || params.means.size() % dim != 0 ||
        params.variances.size() != params.means.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "codebook %d, stream %d: %d means and %d variances are not G x %d with G >= 1", codebook, f,
          params.means.size(), params.variances.size(), dim));
    }
    const int64_t count = static_cast<int64_t>(params.means.size()) / dim;
    for (int64_t g = 0; g < count; ++g) {
      for (int d = 0; d < dim; ++d) {
        const double mean = params.means[g * dim + d];
        const double var = params.variances[g * dim + d];
        if (!std::isfinite(mean)) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "codebook %d, stream %d, Gaussian %d: mean of dimension %d is not finite", codebook, f, g, d));
        }
        if (!std::isfinite(var) || !(var > 0.0) || !std::isfinite(static_cast<float>(0.5 / var))) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "codebook %d, stream %d, Gaussian %d: variance of dimension %d is %g, not a positive "
              "float32-representable variance",
              codebook, f, g, d, var));
        }
      }
    }
    sizes[f] = static_cast<int>(count);
  }
  for (size_t f = 0; f < streams_.size(); ++f) {
    means_[f].insert(means_[f].end(), streams[f].means.begin(), streams[f].means.end());
    variances_[f].insert(variances_[f].end(), streams[f].variances.begin(), streams[f].variances.end());
  }
  codebook_sizes_.push_back(std::move(sizes));
  return codebook;
}

absl::Status TiedMixtureModelBuilder::AddState(
    int codebook, absl::Span<const absl::Span<const double>> log_weights) {
  const int state = num_states();
  if (codebook < 0 || codebook >= num_codebooks()) {
    return absl::InvalidArgumentError(absl::StrCat("state ", state, ": codebook ", codebook,
                                                   " does not exist (", num_codebooks(), " codebooks)"));
  }
  if (log_weights.size() != streams_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("state ", state, ": ", log_weights.size(),
                                                   " weight vectors for ", streams_.size(), " streams"));
  }
  for (size_t f = 0; f < streams_.size(); ++f) {
    const absl::Span<const double> w = log_weights[f];
    if (static_cast<int>(w.size()) != codebook_sizes_[codebook][f]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "state %d, stream %d: %d weights for codebook %d of %d Gaussians", state, f, w.size(),
          codebook, codebook_sizes_[codebook][f]));
    }
    bool any_finite = false;
    for (size_t g = 0; g < w.size(); ++g) {
      if (std::isnan(w[g]) || w[g] > TiedMixtureModel::kMaxLogWeight) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "state %d, stream %d, Gaussian %d: log weight %g is not the log of a probability", state, f,
            g, w[g]));
      }
      any_finite = any_finite || std::isfinite(w[g]);
    }
    if (!any_finite) {
      return absl::InvalidArgumentError(
          absl::StrFormat("state %d, stream %d: every weight is 0", state, f));
    }
  }
  for (const absl::Span<const double> w : log_weights) {
    for (const double value : w) log_weights_.push_back(static_cast<float>(value));
    weight_offsets_.push_back(static_cast<int64_t>(log_weights_.size()));
  }
  state_codebook_.push_back(codebook);
  return absl::OkStatus();
}

absl::StatusOr<TiedMixtureModel> TiedMixtureModelBuilder::Build() && {
  if (streams_.empty()) return absl::InvalidArgumentError("model has no feature streams");
  int expected_offset = 0;
  for (size_t f = 0; f < streams_.size(); ++f) {
    if (streams_[f].offset != expected_offset || streams_[f].dim <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "stream %d covers [%d, %d): streams must tile the feature vector in order from 0", f,
          streams_[f].offset, streams_[f].offset + streams_[f].dim));
    }
    expected_offset += streams_[f].dim;
  }
  if (stream_weights_.size() != streams_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(stream_weights_.size(), " stream weights for ",
                                                   streams_.size(), " streams"));
  }
  for (size_t f = 0; f < stream_weights_.size(); ++f) {
    if (!std::isfinite(stream_weights_[f]) || !(stream_weights_[f] > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("stream ", f, ": weight ", stream_weights_[f], " is not positive"));
    }
  }
  if (codebook_sizes_.empty()) return absl::InvalidArgumentError("model has no codebooks");
  if (state_codebook_.empty()) return absl::InvalidArgumentError("model has no states");

  TiedMixtureModel model;
  const int num_streams = static_cast<int>(streams_.size());
  model.dim_ = expected_offset;
  model.num_codebooks_ = num_codebooks();
  model.streams_ = streams_;
  model.stream_weights_ = stream_weights_;
  model.codebook_offsets_.assign(num_streams, std::vector<int64_t>{0});
  model.params_.resize(num_streams);
  model.centers_.resize(num_streams);
  for (int f = 0; f < num_streams; ++f) {
    for (const std::vector<int>& sizes : codebook_sizes_) {
      model.codebook_offsets_[f].push_back(model.codebook_offsets_[f].back() + sizes[f]);
      model.max_codebook_size_ = std::max(model.max_codebook_size_, sizes[f]);
    }
    const int dim = streams_[f].dim;
    const int64_t total = model.codebook_offsets_[f].back();
    std::vector<double> center_sum(dim, 0.0);
    for (int64_t g = 0; g < total; ++g) {
      for (int d = 0; d < dim; ++d) center_sum[d] += means_[f][g * dim + d];
    }
    std::vector<float>& center = model.centers_[f];
    center.resize(dim);
    for (int d = 0; d < dim; ++d) center[d] = static_cast<float>(center_sum[d] / total);
    const int64_t cols = 1 + 2 * dim;
    std::vector<float>& params = model.params_[f];
    params.resize(total * cols);
    for (int64_t g = 0; g < total; ++g) {
      float* row = &params[g * cols];
      double k = -0.5 * dim * kLog2Pi;
      for (int d = 0; d < dim; ++d) {
        const double var = variances_[f][g * dim + d];
        const double mean = means_[f][g * dim + d] - center[d];
        k -= 0.5 * (std::log(var) + mean * mean / var);
        row[1 + d] = static_cast<float>(mean / var);
        row[1 + dim + d] = static_cast<float>(-0.5 / var);
      }
      if (!std::isfinite(static_cast<float>(k))) {
        return absl::InvalidArgumentError(
            absl::StrFormat("stream %d, Gaussian %d: constant %g does not fit a float", f, g, k));
      }
      row[0] = static_cast<float>(k);
    }
  }
  model.state_codebook_ = std::move(state_codebook_);
  model.weight_offsets_ = std::move(weight_offsets_);
  model.log_weights_ = std::move(log_weights_);
  return model;
}

}  // namespace gmmscore
