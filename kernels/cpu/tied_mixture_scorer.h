// CPU float32 scoring of a TiedMixtureModel that evaluates each codebook
// Gaussian once per frame, not once per state that uses it.
//
//   auto model = std::make_shared<const TiedMixtureModel>(std::move(built));
//   TiedMixtureCpuScorer scorer(model, {.num_threads = 2});
//   FloatMatrix loglikes;                       // T x S on return
//   GMM_RETURN_IF_ERROR(scorer.Score(features.view(), &loglikes));
//
// Method, per block of frames and per stream f:
//   1. densities (N_f x T) = params(f) * [1, y, y^2]^T: one SGEMM over every
//      codebook's Gaussians (y = x_f - centre_f);
//   2. per codebook and frame, subtract the codebook's best density m and
//      exponentiate: p = exp(density - m), in (0, 1];
//   3. per codebook, one SGEMM mixes: mix (S_c x T) = W_c (S_c x G) * p
//      (G x T), with W_c the linear weights of the S_c states that use the
//      codebook, so ll_f = log(mix) + m.
// For a PTM model (en-us: 42 codebooks x 3 streams x 128 Gaussians, 5126
// states) that is 16k Gaussian evaluations and 2M multiply-adds per frame,
// instead of 2M Gaussian evaluations (x 13 dims) if each state owned its 384.
// The linear mix loses nothing while a state gives the codebook's best
// Gaussian a weight above ~1e-30; where mix underflows (below 1e-30: a state
// whose weights avoid every Gaussian near the frame) that state, stream and
// frame is recomputed exactly in the log domain.
//
// Accuracy: float32 densities as in the CPU backend (cpu_backend.h), plus a
// relative error of a few 1e-7 from the G-term dot product, i.e. ~1e-6 nats;
// tied_mixture_scorer_test checks 2e-3 nats worst case against the float64
// reference on MFCC-scale data, with its measured value in the test log.
//
// Integration: the CPU backend (cpu_backend.h) scores tied models prepared
// with ScoringBackend::PrepareTied with this scorer; the CUDA backend runs
// the same method on the device (kernels/cuda/tied_mixture_device.h).
//
// Thread safety: Score is const and may be called concurrently; calls share
// the scorer's thread pool.
#ifndef GMMSCORE_KERNELS_CPU_TIED_MIXTURE_SCORER_H_
#define GMMSCORE_KERNELS_CPU_TIED_MIXTURE_SCORER_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "kernels/core/matrix.h"
#include "kernels/model/tied_mixture_model.h"

namespace gmmscore {

class ThreadPool;

struct TiedMixtureScorerOptions {
  // Threads per Score call, the caller's included. 0 = hardware concurrency.
  int num_threads = 0;
  // Frames per task (and per SGEMM).
  int frames_per_block = 64;
};

class TiedMixtureCpuScorer {
 public:
  // Precomputes the linear weights, grouped by codebook. `model` must not be
  // null.
  TiedMixtureCpuScorer(std::shared_ptr<const TiedMixtureModel> model,
                       const TiedMixtureScorerOptions& options = {});
  ~TiedMixtureCpuScorer();
  TiedMixtureCpuScorer(const TiedMixtureCpuScorer&) = delete;
  TiedMixtureCpuScorer& operator=(const TiedMixtureCpuScorer&) = delete;

  const TiedMixtureModel& model() const { return *model_; }

  // Fills *loglikes (T x S, natural log). INVALID_ARGUMENT unless
  // features.cols == model().dim() and every value is finite (the message
  // names the first bad frame and dimension).
  absl::Status Score(ConstMatrixView features, FloatMatrix* loglikes) const;
  // The same on `pool`'s threads (the caller's included) instead of the
  // scorer's own; `pool` must not be null. The CPU backend scores its
  // tied models this way, on its one pool (a scorer made with
  // num_threads = 1 starts no thread of its own).
  absl::Status Score(ConstMatrixView features, FloatMatrix* loglikes, ThreadPool* pool) const;

 private:
  struct CodebookStates;  // the states of one codebook and their weights
  void ScoreBlock(ConstMatrixView features, int64_t first_frame, int64_t frames,
                  FloatMatrix& loglikes) const;

  const std::shared_ptr<const TiedMixtureModel> model_;
  const TiedMixtureScorerOptions options_;
  std::vector<CodebookStates> codebooks_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CPU_TIED_MIXTURE_SCORER_H_
