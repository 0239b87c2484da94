// Fusion of the state log-likelihoods of several models that share one state
// set (speaker-cluster models), per stream: max, weighted log-sum-exp, and
// weights from running model posteriors smoothed over a sliding window (the
// fast fusion / model selection of Vanek et al. 2011, sec. 1). Pure maths, no
// I/O; the float64 reference is in fusion_reference.h.
//
//   GMM_ASSIGN_OR_RETURN(ModelFusion fusion,
//       ModelFusion::Create(2, {.method = FusionMethod::kPosterior, .window_frames = 50}));
//   FusedScores fused;
//   GMM_RETURN_IF_ERROR(fusion.Fuse({a.view(), b.view()}, &fused));  // chunk after chunk
//
// With L_m the T x S matrix of model m and w_m(t) its weight at frame t:
//   kMax        fused[t][s] = max_m L_m[t][s]
//   kLogSumExp  fused[t][s] = log sum_m w_m exp(L_m[t][s]),  w fixed
//   kPosterior  fused[t][s] = log sum_m w_m(t) exp(L_m[t][s]) with
//               l_m(t) = log sum_s exp(L_m[t][s])
//               p_m(t) = prior_m exp(scale l_m(t)) / sum_k prior_k exp(scale l_k(t))
//               w_m(t) = mean of p_m over the last window_frames frames
//                        (t included; fewer at the start of the stream).
// All sums are taken in float64. The window spans calls, so a stream gives
// the same result however its frames are cut into chunks.
//
// Which model dominated: at frame t with best fused state s*, the model whose
// term is largest in fused[t][s*] (kMax: the model holding the maximum;
// otherwise the largest log w_m(t) + L_m[t][s*]). A chunk's dominant model is
// the one that dominated the most frames (ties: the lower index).
#ifndef GMMSCORE_KERNELS_SCORE_FUSION_H_
#define GMMSCORE_KERNELS_SCORE_FUSION_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

enum class FusionMethod { kMax, kLogSumExp, kPosterior };

// "max", "logsumexp", "posterior".
absl::string_view FusionMethodName(FusionMethod method);
absl::StatusOr<FusionMethod> ParseFusionMethod(absl::string_view name);

struct FusionOptions {
  FusionMethod method = FusionMethod::kMax;
  // One positive weight per model, normalised to sum to 1; empty = uniform.
  // kLogSumExp: the mixture weights. kPosterior: the priors. kMax: unused.
  std::vector<double> weights;
  // kPosterior: sliding window length in frames, 1 .. kMaxWindowFrames.
  int window_frames = 50;
  // kPosterior: scale on l_m(t) before the softmax, finite and >= 0.
  double acoustic_scale = 1.0;

  static constexpr int kMaxWindowFrames = 10000;
};

struct FusedScores {
  FloatMatrix loglikes;              // T x S
  int dominant_model = 0;            // index of the model that dominated most frames
  std::vector<float> model_share;    // M: fraction of frames each model dominated
  std::vector<float> model_weights;  // T x M weights w_m(t); empty for kMax
  // T: log sum_s exp(loglikes[t][s]); filled only by a backend asked for
  // them (FusionJob::frame_totals), empty otherwise.
  std::vector<float> frame_totals;
};

// Stateful for kPosterior (the window), stateless otherwise. Movable, not
// thread-safe: one per stream, fed its chunks in order.
class ModelFusion {
 public:
  // INVALID_ARGUMENT when num_models < 1, weights.size() is neither 0 nor
  // num_models, a weight is not finite and > 0, or window_frames /
  // acoustic_scale are out of range.
  static absl::StatusOr<ModelFusion> Create(int num_models, FusionOptions options);

  int num_models() const { return num_models_; }
  const FusionOptions& options() const { return options_; }

  // Fuses the stream's next T frames; loglikes[m] is model m's T x S matrix.
  // INVALID_ARGUMENT (and no state change) if the count of matrices is not
  // num_models() or their shapes differ. Overwrites *out.
  absl::Status Fuse(absl::Span<const ConstMatrixView> loglikes, FusedScores* out);

  // Fuse in two halves, for a backend that does the per-state work itself
  // (the CUDA backend, on the device), with the float64 window kept here:
  //
  //   1. NextLogWeights: from the frame totals l_m(t) of the next T frames
  //      (frame_totals[t * M + m]; read for kPosterior only, may be empty
  //      otherwise) the log weights log w_m(t) (T x M; kMax: all 0) and
  //      out->model_weights; advances the window by T frames.
  //      INVALID_ARGUMENT (no state change) if frame_totals is neither
  //      empty nor T x M, or empty for kPosterior.
  //   2. the caller computes fused[t][s] and, per frame, the dominating
  //      model (see the top of this file) with those log weights;
  //   3. SetDominance: out->dominant_model and model_share from the
  //      per-frame winners.
  absl::Status NextLogWeights(absl::Span<const double> frame_totals, int64_t frames,
                              std::vector<double>* log_weights, FusedScores* out);
  void SetDominance(absl::Span<const int> winners, FusedScores* out) const;

 private:
  ModelFusion(int num_models, FusionOptions options, std::vector<double> log_weights);

  // Fills weights_t (M) for the next frame of a kPosterior stream, whose
  // per-model frame totals are totals_t (M), and moves the window on.
  void AdvancePosteriorWindow(const double* totals_t, double* weights_t);

  int num_models_;
  FusionOptions options_;
  std::vector<double> log_weights_;  // normalised log weights (LSE) or log priors (posterior)
  // kPosterior: a ring of the window's per-frame posteriors p(tau), M each;
  // window_size_ of window_frames slots are filled, window_next_ is the slot
  // the next frame overwrites.
  std::vector<double> window_;
  int window_size_ = 0;
  int window_next_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_FUSION_H_
