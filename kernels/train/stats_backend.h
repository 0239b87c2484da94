// StatsBackend: computes GmmStats for blocks of frames on one device (the
// float64 reference, the multi-threaded BLAS CPU path, the CUDA kernels).
//
//   std::unique_ptr<StatsBackend> backend = ...;
//   GMM_RETURN_IF_ERROR(backend->SetModel(model));
//   GMM_ASSIGN_OR_RETURN(auto block, backend->LoadFrames(features.view()));
//   GmmStats stats = GmmStats::ForModel(model);
//   GMM_RETURN_IF_ERROR(backend->Accumulate(*block, /*pairs=*/{}, &stats));  // a UBM
//
// What a frame contributes to is given by `pairs`:
//   - empty: every frame of the block, with weight 1, to state 0 of set 0
//     (a global GMM / UBM); the model must then have exactly one state;
//   - otherwise each StatsPair sends frame `frame` with weight `weight` to
//     state `target % S` of set `target / S` (S = model states): one pair per
//     frame for an alignment, several for posteriors, set > 0 for the other
//     speakers of a batched MAP pass. Pairs may come in any order; a frame
//     may appear in many pairs or none.
// Within a state, a frame's Gaussian posteriors are
//   gamma_tg = weight * exp(loglik_tg - logsumexp_{g' in s} loglik_tg'),
// and total_loglike gains weight * logsumexp_{g in s} loglik_tg.
//
// A FrameBlock holds frames where the backend computes (the CUDA one on the
// device), so that EM passes over data that fits reuse it each iteration
// without copying it again. A block stays valid across SetModel calls; it
// must not outlive its backend.
//
// Errors: INVALID_ARGUMENT (before anything is added to `stats`) for
// unusable feature values (feature_values.h), a frame width that is not the
// model's dimension, a pair whose frame or target is out of range or whose
// weight is not finite, stats not shaped for the model and the pairs'
// sets, or no pairs for a model of several states; FAILED_PRECONDITION
// without a model; device errors as the backend reports them.
//
// Thread safety: one thread at a time per backend.
#ifndef GMMSCORE_KERNELS_TRAIN_STATS_BACKEND_H_
#define GMMSCORE_KERNELS_TRAIN_STATS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/train/gmm_stats.h"

namespace gmmscore {

struct StatsPair {
  int32_t frame = 0;   // row of the block
  int32_t target = 0;  // set * num_states + state
  float weight = 1.0f;
};

// Frames held by a backend (see the file comment).
class FrameBlock {
 public:
  virtual ~FrameBlock() = default;
  virtual int64_t num_frames() const = 0;
  virtual int dim() const = 0;
};

class StatsBackend {
 public:
  virtual ~StatsBackend() = default;

  // "reference", "cpu" or "cuda".
  virtual std::string name() const = 0;

  // Makes `model` the one later Accumulate calls use (the backend copies
  // what it needs; `model` need not outlive the call).
  virtual absl::Status SetModel(const DiagGmmModel& model) = 0;

  // Takes a copy of `frames` (T x D) in the backend's memory. Checks the
  // feature values (INVALID_ARGUMENT naming frame and dimension).
  virtual absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) = 0;

  // Adds the statistics of `block` under `pairs` to *stats (see above).
  virtual absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs,
                                  GmmStats* stats) = 0;

  // Bytes of frames this backend can hold at once (device memory for CUDA);
  // the EM driver keeps all data resident when it fits, else streams blocks.
  virtual int64_t frame_memory_budget() const = 0;
};

// What the checks need of a model: backends keep this, not the model.
struct ModelShape {
  int dim = 0;
  std::vector<int64_t> state_offsets{0};
  static ModelShape Of(const DiagGmmModel& model);
  int num_states() const { return static_cast<int>(state_offsets.size()) - 1; }
};

// The checks every backend applies before touching `stats` (see Errors
// above), given the current model's shape (nullptr: FAILED_PRECONDITION).
absl::Status ValidateStatsRequest(const ModelShape* model, int64_t num_frames, int frame_dim,
                                  absl::Span<const StatsPair> pairs, const GmmStats& stats);

// INVALID_ARGUMENT naming the first unusable value (frame, dimension).
absl::Status ValidateFrames(ConstMatrixView frames);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_STATS_BACKEND_H_
