// TiedMixtureModel: states that mix Gaussians from shared codebooks, over one
// or more feature streams. It covers every CMU Sphinx model shape and HTK's
// multi-stream states, which a DiagGmmModel (one private mixture per state,
// one stream) cannot hold:
//   semi-continuous   1 codebook shared by all states (per stream)
//   PTM               1 codebook per base phone, states of the phone share it
//   continuous        1 codebook per state (then a DiagGmmModel also fits
//                     when there is a single stream: ToDiagGmmModel)
//   multi-stream      any of the above with F > 1 streams, each a slice of
//                     the feature vector
//
//   TiedMixtureModelBuilder builder({{0, 13}, {13, 13}, {26, 13}});  // 3 streams
//   const int cb = builder.AddCodebook({{means0, vars0}, {means1, vars1}, {means2, vars2}});
//   GMM_RETURN_IF_ERROR(builder.AddState(cb, {logw0, logw1, logw2}));
//   GMM_ASSIGN_OR_RETURN(TiedMixtureModel model, std::move(builder).Build());
//
// Score of state s on frame x (natural log):
//   ll(s, x) = sum_f stream_weight[f] *
//              log sum_g exp(log_weight[s][f][g] + log N(x_f; mu[c][f][g], var[c][f][g]))
// with c = codebook(s), x_f the slice of x that stream f covers, and g over
// codebook c's Gaussians in stream f.
//
// Scoring form. For stream f, the Gaussians of every codebook are rows of one
// matrix params(f), N_f x (1 + 2 d_f): [K, u(1..d_f), v(1..d_f)] with
//   u = mu' / var,  v = -1 / (2 var),
//   K = -(d_f/2) log 2pi - 1/2 sum log var - 1/2 sum mu'^2 / var,
// mu' = mu - centre (the average of all means of the stream, as in
// DiagGmmModel), so log N(x_f) = K + u.y + v.y^2 with y = x_f - centre_f.
// K holds no weight: a codebook Gaussian is shared, its weight is not.
// Codebook c's Gaussians in stream f are rows [codebook_begin(c, f),
// codebook_end(c, f)) of params(f); state s's log weights for stream f are
// log_weights(s, f), one per Gaussian of its codebook in that stream.
//
// Weights are stored as given (log domain). They need not sum to 1: Sphinx's
// quantised `sendump` weights do not (see sphinx_model.h); each must be
// finite and at most kMaxLogWeight, or -infinity (weight 0), and each state
// and stream needs at least one finite weight.
//
// Thread safety: immutable after construction; safe to share across threads.
#ifndef GMMSCORE_KERNELS_MODEL_TIED_MIXTURE_MODEL_H_
#define GMMSCORE_KERNELS_MODEL_TIED_MIXTURE_MODEL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"

namespace gmmscore {

// Scorers that mix a codebook's Gaussians with linear weights after taking
// out the codebook's best density (TiedMixtureCpuScorer, the CUDA backend)
// trust a mix above this; at or below it a state's terms may have underflowed
// and its stream score is recomputed exactly in the log domain.
inline constexpr float kTiedSmallestTrustedMix = 1e-30f;

// A stream is the slice [offset, offset + dim) of the feature vector.
struct FeatureStream {
  int offset = 0;
  int dim = 0;
};

class TiedMixtureModel {
 public:
  // Log weights above this (weight > ~1.001) are rejected as not weights.
  static constexpr double kMaxLogWeight = 1e-3;

  TiedMixtureModel(TiedMixtureModel&&) = default;
  TiedMixtureModel& operator=(TiedMixtureModel&&) = default;
  TiedMixtureModel(const TiedMixtureModel&) = delete;
  TiedMixtureModel& operator=(const TiedMixtureModel&) = delete;

  // Feature dimension: the end of the last stream.
  int dim() const { return dim_; }
  int num_streams() const { return static_cast<int>(streams_.size()); }
  int num_codebooks() const { return num_codebooks_; }
  int num_states() const { return static_cast<int>(state_codebook_.size()); }
  const FeatureStream& stream(int f) const { return streams_[f]; }
  absl::Span<const FeatureStream> streams() const { return streams_; }
  // Multiplies stream f's log-likelihood (HTK <SWeights>); 1 by default.
  float stream_weight(int f) const { return stream_weights_[f]; }

  int codebook_of_state(int s) const { return state_codebook_[s]; }
  int64_t codebook_begin(int c, int f) const { return codebook_offsets_[f][c]; }
  int64_t codebook_end(int c, int f) const { return codebook_offsets_[f][c + 1]; }
  int codebook_size(int c, int f) const {
    return static_cast<int>(codebook_end(c, f) - codebook_begin(c, f));
  }
  // Gaussians in stream f, over all codebooks.
  int64_t num_gaussians(int f) const { return codebook_offsets_[f].back(); }
  // Gaussians over all streams and codebooks (each evaluated once per frame).
  int64_t total_gaussians() const;
  // Largest codebook size in any stream.
  int max_codebook_size() const { return max_codebook_size_; }

  // N_f x (1 + 2 d_f) scoring-form rows of stream f (see the file comment).
  ConstMatrixView params(int f) const {
    return ConstMatrixView(params_[f].data(), num_gaussians(f), 1 + 2 * streams_[f].dim);
  }
  absl::Span<const float> center(int f) const { return centers_[f]; }
  // codebook_size(codebook_of_state(s), f) log weights.
  absl::Span<const float> log_weights(int s, int f) const {
    const int64_t begin = weight_offsets_[static_cast<int64_t>(s) * num_streams() + f];
    const int64_t end = weight_offsets_[static_cast<int64_t>(s) * num_streams() + f + 1];
    return absl::MakeConstSpan(log_weights_.data() + begin, end - begin);
  }

  // The model of states `states` only (in that order: state i of the
  // result is states[i]) with only the codebooks they use: an aligner scores
  // just the senones an utterance's graph needs. The scoring form is copied,
  // not recomputed (the centres stay), so scores are bit-identical to the
  // whole model's. INVALID_ARGUMENT for an empty list or a state out of range.
  absl::StatusOr<TiedMixtureModel> SubsetStates(absl::Span<const int32_t> states) const;

  // Mean and variance of row g of stream f, in float64.
  NaturalGaussian Natural(int f, int64_t g) const;

  // Host bytes held by the scoring form and the weights.
  int64_t ByteSize() const;
  // Bytes the same states would take as a DiagGmmModel with private
  // Gaussians (each state owning a copy of its codebook); only meaningful for
  // a single stream, but computed for any: sum over states and streams of
  // codebook_size x (1 + 2 d_f) floats.
  int64_t UntiedByteSize() const;

  // The same model as a DiagGmmModel: each state gets private copies of its
  // codebook's Gaussians with its weights, which must then sum to 1
  // (DiagGmmModel::kWeightSumTolerance). UNIMPLEMENTED for more than one
  // stream (a product of mixtures is not one mixture) or a stream weight other
  // than 1; INVALID_ARGUMENT (naming the state) when weights do not sum to 1.
  // Gaussians of weight 0 are dropped.
  absl::StatusOr<DiagGmmModel> ToDiagGmmModel() const;

 private:
  friend class TiedMixtureModelBuilder;
  TiedMixtureModel() = default;

  int dim_ = 0;
  int num_codebooks_ = 0;
  int max_codebook_size_ = 0;
  std::vector<FeatureStream> streams_;
  std::vector<float> stream_weights_;
  std::vector<std::vector<int64_t>> codebook_offsets_;  // [f][c], C + 1 each
  std::vector<std::vector<float>> params_;              // [f]: N_f x (1 + 2 d_f)
  std::vector<std::vector<float>> centers_;             // [f]: d_f
  std::vector<int> state_codebook_;                     // S
  std::vector<int64_t> weight_offsets_;                 // S * F + 1
  std::vector<float> log_weights_;
};

// One codebook's Gaussians in one stream, natural parameters, row-major
// G x d_f means and variances.
struct CodebookStreamParams {
  absl::Span<const double> means;
  absl::Span<const double> variances;
};

// Builds a TiedMixtureModel from natural parameters. Not thread-safe.
class TiedMixtureModelBuilder {
 public:
  // Streams must tile [0, D) in order without gaps or overlaps; checked by
  // Build().
  explicit TiedMixtureModelBuilder(std::vector<FeatureStream> streams);

  // Sets per-stream weights (default all 1). Checked by Build(): finite, > 0.
  void SetStreamWeights(std::vector<float> weights) { stream_weights_ = std::move(weights); }

  // Adds a codebook with one entry per stream; returns its index, or
  // INVALID_ARGUMENT (naming the codebook, stream and Gaussian) on sizes that
  // are not G x d_f, non-finite means, or variances that are not positive
  // finite (or too small for float32's 1/var).
  absl::StatusOr<int> AddCodebook(absl::Span<const CodebookStreamParams> streams);

  // Adds the next state: it uses `codebook` and has one span of log weights
  // per stream, codebook_size(codebook, f) each. INVALID_ARGUMENT (naming the
  // state) on a bad codebook index, a wrong count, a NaN or +inf, a log
  // weight above kMaxLogWeight, or a stream with every weight -inf.
  absl::Status AddState(int codebook, absl::Span<const absl::Span<const double>> log_weights);

  int num_codebooks() const { return static_cast<int>(codebook_sizes_.size()); }
  int num_states() const { return static_cast<int>(state_codebook_.size()); }

  // Computes centres and the scoring form in float64, rounds to float32.
  // INVALID_ARGUMENT for bad streams or stream weights, no states, or no
  // codebooks.
  absl::StatusOr<TiedMixtureModel> Build() &&;

 private:
  std::vector<FeatureStream> streams_;
  std::vector<float> stream_weights_;
  std::vector<std::vector<int>> codebook_sizes_;    // [c][f]
  std::vector<std::vector<double>> means_;          // [f]: all codebooks, row-major
  std::vector<std::vector<double>> variances_;      // [f]
  std::vector<int> state_codebook_;
  std::vector<int64_t> weight_offsets_{0};
  std::vector<float> log_weights_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_MODEL_TIED_MIXTURE_MODEL_H_
