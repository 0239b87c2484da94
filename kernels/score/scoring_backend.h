// ScoringBackend: the one interface every way of computing state
// log-likelihoods sits behind (CPU float32, CUDA fused, CUDA cuBLAS).
//
//   std::unique_ptr<ScoringBackend> backend = ...;   // e.g. CreateCpuBackend()
//   GMM_ASSIGN_OR_RETURN(auto prepared, backend->Prepare(model));
//   ScoreResult result;
//   GMM_RETURN_IF_ERROR(backend->Score(*prepared, features.view(), {}, &result));
//   float ll = result.loglikes.at(frame, state);   // natural log
//
// For frames x_t (rows of `features`, T x D) and every state s:
//   loglikes[t][s]  = log sum_g exp(K_g + u_g . y_t + v_g . y_t^2),  y_t = x_t - c
//   frame_totals[t] = log sum_s exp(loglikes[t][s])
// A tied-mixture model (TiedMixtureModel: Sphinx semi-continuous and PTM,
// multi-stream HTK) is prepared with PrepareTied and scored through the
// same Score/ScoreBatch calls; its loglikes are the TiedMixtureModel's state
// scores (tied_mixture_model.h), frame totals as above.
#ifndef GMMSCORE_KERNELS_SCORE_SCORING_BACKEND_H_
#define GMMSCORE_KERNELS_SCORE_SCORING_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/model/tied_mixture_model.h"
#include "kernels/score/feature_transform.h"
#include "kernels/score/fmllr_gather.h"
#include "kernels/score/fusion.h"
#include "kernels/score/half_scores.h"
#include "kernels/score/posterior_policy.h"
#include "kernels/score/state_selection.h"

namespace gmmscore {

// How a CUDA backend computes the likelihoods. CPU backends ignore it.
enum class Algorithm {
  kAuto,     // the backend's choice for the shape
  kFused8,   // the paper's fused kernel, 8 frames per block
  kFused16,  // the paper's fused kernel, 16 frames per block
  kFused32,  // the fused kernel, 32 frames per block (beyond the paper)
  kFused8x2, // the fused kernel register-blocked: each thread evaluates two
             // Gaussians of its state per frame load, 8 frames per block
  kFused8x4, // the same with four Gaussians per frame load
  kSplit8,   // the fused kernel with each state's Gaussians split over
             // threads and blocks, 8 frames per block: for short windows
  kTf32x3,   // tensor cores, 3xTF32 with the log-sum-exp in the epilogue
             // ("fast" precision: error up to 1e-3 nats), mma.sync
  kWgmma,    // the same 3xTF32 form on Hopper's asynchronous warpgroup MMAs
             // (wgmma, H100/H200 only), model chunks streamed by cp.async
  kWgmmaHalf,// the wgmma kernel in 3xFP16 with power-of-two scales (same
             // mantissa bits as 3xTF32, twice the k per MMA; H100/H200 only)
  kGemm,     // cuBLAS SGEMM on [1, y, y^2] + segmented log-sum-exp
};

// "auto", "fused8", "fused16", "fused32", "fused8x2", "fused8x4", "split8",
// "tf32x3", "wgmma", "wgmma_f16", "gemm".
absl::string_view AlgorithmName(Algorithm algorithm);
absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view name);

// How exactly a model is scored, chosen per model (the daemon's config file,
// ModelConfig.precision):
//   kExact  float32 kernels only: max error ~1e-4 nats (docs/PERFORMANCE.md)
//   kFast   may use a tensor-core kernel where it is faster for the window's
//           shape (3xFP16 wgmma_f16 on an H100/H200; error up to 1e-3 nats);
//           the same as kExact on the CPU backend and wherever no
//           tensor-core kernel wins.
enum class Precision { kExact, kFast };

// "exact", "fast".
absl::string_view PrecisionName(Precision precision);
// "exact" (or "fp32", its older name) and "fast"; INVALID_ARGUMENT otherwise.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

struct ScoreOptions {
  Algorithm algorithm = Algorithm::kAuto;
  // Also compute ScoreResult::frame_totals.
  bool frame_totals = true;
};

struct ScoreResult {
  FloatMatrix loglikes;             // T x S, natural log
  std::vector<float> frame_totals;  // T (empty unless requested)
  // Set instead of loglikes (left 0 x 0) where the backend made the
  // window's selection (ScoreWindow::select): the kept states of each frame.
  std::optional<SparseScores> sparse;
  // Set instead of loglikes (left 0 x 0) where the backend encoded the
  // window's scores in half precision (ScoreWindow::half_from_best).
  std::optional<HalfScores> half;
};

// A model made ready for one backend (uploaded, re-laid-out). Immutable.
// It holds either a DiagGmmModel (untied) or a TiedMixtureModel (tied());
// dim(), num_states() and the sizes below are there for both.
class PreparedModel {
 public:
  virtual ~PreparedModel() = default;
  bool tied() const { return tied_ != nullptr; }
  // The untied model: only for !tied() (null for a tied one).
  const DiagGmmModel& model() const { return *model_; }
  const std::shared_ptr<const DiagGmmModel>& shared_model() const { return model_; }
  // The tied model: only for tied() (null for an untied one).
  const TiedMixtureModel& tied_model() const { return *tied_; }
  const std::shared_ptr<const TiedMixtureModel>& shared_tied_model() const { return tied_; }

  int dim() const { return dim_; }
  int num_states() const { return num_states_; }
  // Gaussians evaluated per frame: every Gaussian of an untied model; every
  // codebook Gaussian (all streams) of a tied one, each once.
  int64_t gaussians_per_frame() const { return gaussians_per_frame_; }
  // Most Gaussians one state mixes (tied: its codebook's, over all streams).
  int max_gaussians_per_state() const { return max_gaussians_per_state_; }
  // Host bytes of the model's scoring form (ByteSize()).
  int64_t host_bytes() const { return host_bytes_; }
  // Bytes this preparation holds on the backend's device (0 for the CPU).
  virtual int64_t device_bytes() const = 0;

 protected:
  explicit PreparedModel(std::shared_ptr<const DiagGmmModel> model);
  explicit PreparedModel(std::shared_ptr<const TiedMixtureModel> model);

 private:
  std::shared_ptr<const DiagGmmModel> model_;
  std::shared_ptr<const TiedMixtureModel> tied_;
  int dim_ = 0;
  int num_states_ = 0;
  int64_t gaussians_per_frame_ = 0;
  int max_gaussians_per_state_ = 0;
  int64_t host_bytes_ = 0;
};

// One window of a batch: `features` scored with `model` into `*result`.
// With a `transform` (a stream's speaker transform, whose dim() must be the
// model's), every frame x is scored as y = A x + b instead: the CUDA backend
// applies it on the device (float64 sums, rounded once), the others on the
// host; both within float32 rounding of the exact transform.
struct ScoreWindow {
  const PreparedModel* model = nullptr;
  ConstMatrixView features;
  ScoreResult* result = nullptr;
  const FeatureTransform* transform = nullptr;
  // The model's precision; an explicit ScoreOptions::algorithm overrides it.
  Precision precision = Precision::kExact;
  // The states the caller will keep (SelectStates). A backend that can
  // select where the scores lie returns only those, in result->sparse: the
  // CUDA backend does for a top_k below the state count, so a 5000-state
  // frame sends 100 values through the copy and the host, not 5000. Other
  // windows come back dense and the caller selects (the daemon on its
  // answer threads, in parallel). Frame totals stay over all states. A
  // window in a FusionJob must be dense.
  StateSelection select;
  // A stream's fMLLR statistics to gather from this window (fmllr_gather.h),
  // into segment gather_segment of a target this backend made
  // (CreateFmllrGather, for this window's model). Null: none. A backend
  // that does not gather refuses such a window (FAILED_PRECONDITION).
  FmllrGatherTarget* gather = nullptr;
  int gather_segment = 0;
  // The caller sends these scores as HalfScores (OutputOptions.float16). A
  // backend that encodes where the scores lie returns result->half instead
  // of loglikes: the CUDA backend does for an untied window with no
  // selection (`select` dense) and in no fusion, so half the bytes come
  // back and the host makes no pass over them. Others return loglikes as
  // ever and the caller encodes; a caller must take either. Frame totals
  // are unaffected.
  bool half_from_best = false;
};

// Copies the scores of `result` that a backend left on a shared block
// (FloatMatrix::on_block, HalfScores::values on a block) into memory of
// their own: a result held long (behind a slow client's answers, in an
// adaptation backlog) then holds its own bytes, not the block that every
// window of its backend call shares.
void DetachFromBlocks(ScoreResult* result);

// INVALID_ARGUMENT unless job has a model and a result, and its features
// (and transform, if any) have the model's dimension.
absl::Status ValidateWindowShape(const ScoreWindow& job);

// The windows of one chunk scored with several models (a speaker-cluster
// fusion), fused by the backend in the same call (ScoreFusedBatch): on CUDA
// on the device, so that only the fused T x S scores come back instead of
// one matrix per model.
struct FusionJob {
  // Index in the call's windows of each model's window, in the fusion's
  // model order (fusion->num_models() of them): same frames, same states.
  std::vector<int> windows;
  // Advanced by the windows' frames. Its state is unspecified after an
  // error (callers that retry fuse from a copy).
  ModelFusion* fusion = nullptr;
  FusedScores* out = nullptr;
  // false: the windows' own results are left empty (0 x 0, no totals), so
  // nothing but the fused scores is copied back (OutputOptions.fused_only).
  bool model_scores = true;
  // Also fill out->frame_totals.
  bool frame_totals = false;
};

// INVALID_ARGUMENT unless every fusion has a state and an output, one
// in-range window per model, windows of equal frame and state counts, no
// selection (fusion needs every state), and no window belongs to two
// fusions.
absl::Status ValidateFusionJobs(absl::Span<const ScoreWindow> jobs,
                                absl::Span<const FusionJob> fusions);

// Page-locked host memory a backend keeps for the scores it hands out (the
// CUDA backend's pinned blocks, CudaBackendOptions::pinned_scores_bytes).
struct PinnedScoresStats {
  int64_t held_bytes = 0;    // made, idle or in use
  int64_t in_use_bytes = 0;  // held by results now
  // Times a backend call found no free block and copied scores into
  // results of their own instead (a call with float32 and half-precision
  // scores may count twice).
  int64_t refusals = 0;
};

// What ScoringBackend::WarmUp readies a backend for: calls of up to
// `frames` frames of one model (the daemon's --max_batch_frames), in
// windows of `window_frames` (a stream's chunk; 1, the most windows a call
// of `frames` can have, sizes the per-window tables for any chunks), at
// `precision`, answered whole, as their `top_k` states (none when 0 or not
// below the model's states), in half precision, fused with each other, and
// as adapting streams' windows (a speaker transform each, fMLLR gathering).
struct WarmUpShape {
  int64_t frames = 0;
  int64_t window_frames = 1;
  Precision precision = Precision::kExact;
  int top_k = 100;
};

class ScoringBackend {
 public:
  virtual ~ScoringBackend() = default;

  // "cpu", "cuda:0", ...
  virtual std::string name() const = 0;

  // Score calls that run at once to good effect: the daemon's default number
  // of scheduler workers. The CUDA backend's lanes (streams whose copies and
  // kernels overlap); 2 on the CPU, whose calls share one thread pool.
  virtual int concurrent_calls() const { return 2; }

  // Its pinned score memory now; zeros for a backend that keeps none.
  virtual PinnedScoresStats pinned_scores() const { return {}; }

  // Whether a window of `model` asking for `select` comes back selected
  // (ScoreResult::sparse) rather than dense: what a caller will hold for it.
  // None by default; the CUDA backend's for an untied model and a top_k
  // below its state count.
  virtual bool ReturnsSelected(const PreparedModel& model, const StateSelection& select) const {
    (void)model;
    (void)select;
    return false;
  }

  // Makes `model` ready for scoring on this backend. Several prepared models
  // may be resident at once. RESOURCE_EXHAUSTED if it does not fit.
  virtual absl::StatusOr<std::shared_ptr<const PreparedModel>> Prepare(
      std::shared_ptr<const DiagGmmModel> model) = 0;

  // The same for a tied-mixture model: each codebook Gaussian is evaluated
  // once per frame, not once per state that uses it. The base implementation
  // answers UNIMPLEMENTED (the CPU and CUDA backends implement it).
  // (A name of its own, not a Prepare overload: Prepare(nullptr) stays
  // unambiguous and overriders of Prepare do not hide it.)
  virtual absl::StatusOr<std::shared_ptr<const PreparedModel>> PrepareTied(
      std::shared_ptr<const TiedMixtureModel> model);

  // Runs calls of `model` of every size up to shape.frames through each of
  // its concurrent calls' resources, once for each kind of answer, so that
  // calls under load neither grow buffers nor load kernels. The CUDA
  // backend's lanes grow their pinned and device buffers as calls need
  // (cudaFree and cudaFreeHost wait for the whole device, pinned memory
  // takes milliseconds to make) and kernels load at their first launch:
  // daemons without a warm-up had 9-16 backend calls of 51-410 ms in their
  // first seconds and ramps, warmed ones none (docs/PERFORMANCE.md, stop
  // 56). It takes the lanes one at a time, so other calls go on meanwhile.
  // Nothing to do by default (OK).
  virtual absl::Status WarmUp(const PreparedModel& model, const WarmUpShape& shape) {
    (void)model;
    (void)shape;
    return absl::OkStatus();
  }
  // Whether WarmUp does anything here (the CUDA backend's does).
  virtual bool warms_up() const { return false; }

  // A target for fMLLR statistics that this backend gathers while scoring
  // windows of `model` (ScoreWindow::gather, fmllr_gather.h), with
  // `policy`'s state posteriors. The base implementation answers
  // UNIMPLEMENTED: the CPU backend leaves gathering to the daemon's
  // adaptation workers. The CUDA backend makes them for untied models
  // (FAILED_PRECONDITION for a tied one; UNIMPLEMENTED past the dimension
  // and Gaussians per state its kernels take).
  virtual absl::StatusOr<std::unique_ptr<FmllrGatherTarget>> CreateFmllrGather(
      const PreparedModel& model, const PosteriorPolicy& policy);

  // Scores `features` (T x D, T >= 0) with a model this backend prepared.
  // Validates the features first (ValidateFeatures). Overwrites *result.
  // Thread-safe: concurrent calls are allowed (they may serialise).
  virtual absl::Status Score(const PreparedModel& model, ConstMatrixView features,
                             const ScoreOptions& options, ScoreResult* result) = 0;

  // Scores several windows, each with its own model (all prepared by this
  // backend), as one unit of work: on CUDA one copy in, one kernel launch
  // for all models (split8, the kAuto choice under 32 frames a model; longer
  // runs get a launch each), one copy out. Every job is
  // validated before any work starts; on error no result is meaningful.
  // The base implementation calls Score for each job (transforming its
  // frames on the host first); its results are dense.
  virtual absl::Status ScoreBatch(absl::Span<const ScoreWindow> jobs, const ScoreOptions& options);

  // ScoreBatch, then each fusion of `fusions` (FusionJob) over its windows'
  // scores. The base implementation fuses on the host (ModelFusion::Fuse);
  // the CUDA backend fuses untied models on the device and copies back only
  // what was asked for. Results equal ScoreBatch's and Fuse's up to float32
  // rounding.
  virtual absl::Status ScoreFusedBatch(absl::Span<const ScoreWindow> jobs,
                                       absl::Span<const FusionJob> fusions,
                                       const ScoreOptions& options);
};

// INVALID_ARGUMENT unless features.cols == model.dim() and every value is
// finite; the message names the first bad frame and dimension.
absl::Status ValidateFeatures(const DiagGmmModel& model, ConstMatrixView features);
absl::Status ValidateFeatures(const TiedMixtureModel& model, ConstMatrixView features);
absl::Status ValidateFeatures(const PreparedModel& model, ConstMatrixView features);

// frame_totals[t] = log sum_s exp(loglikes[t][s]), in float64 internally.
std::vector<float> ComputeFrameTotals(const FloatMatrix& loglikes);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_SCORE_SCORING_BACKEND_H_
