// OnlineAdapter: speaker adaptation of one live stream from its own speech.
// Chunk by chunk it gathers adaptation statistics from the stream's frames
// and the state posteriors its driving model gave them (or a decoder's), and
// on a schedule estimates either an fMLLR transform (fmllr_estimate.h) or
// MAP-adapted means (map_update.h), as `est-fmllr` and `adapt-map` do
// offline from the same frames and posteriors.
//
//   GMM_ASSIGN_OR_RETURN(auto adapter, OnlineAdapter::Create(model, options));
//   for each chunk, in stream order:
//     GMM_RETURN_IF_ERROR(adapter->AddChunk(frames, PosteriorsFromScores(scores, ...)));
//     if (adapter->UpdateDue()) { GMM_ASSIGN_OR_RETURN(AdaptationUpdate u, adapter->Update()); ... }
//
// Statistics are always of the raw frames (an fMLLR update replaces the
// transform, it does not compose with the last one), so update k uses the
// frames [0, AdaptationUpdate::frames) whatever scored them. Posteriors
// come from whatever scored each chunk (unsupervised adaptation): the
// unadapted model up to the first update, then the adapted one.
//
// Cost per frame, host only: fMLLR as FmllrAccumulator (4.6 us at D = 39
// and 64 Gaussians a pair), on frames gathered kFlushFrames at a time
// (a live stream's 10-frame chunks would each pay the accumulator's fixed
// cost of a D x (D+1) x (D+1) sum); MAP a float64 pass over the Gaussians
// of each state kept. MAP holds sums for the Gaussians touched only (a hash map), so
// a stream of a 160k-Gaussian model holds what its speech reached; each MAP
// update still builds the whole adapted model (280 ms for 5000 x 32 x 39).
//
// Thread safety: none; one caller at a time (the daemon serialises each
// stream's calls on its adaptation worker).
#ifndef GMMSCORE_KERNELS_TRAIN_ONLINE_ADAPTATION_H_
#define GMMSCORE_KERNELS_TRAIN_ONLINE_ADAPTATION_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/score/feature_transform.h"
#include "kernels/train/fmllr_estimate.h"
#include "kernels/train/fmllr_stats.h"
#include "kernels/train/state_posteriors.h"

namespace gmmscore {

enum class AdaptationMethod { kFmllr, kMapMeans };

// "fmllr" or "map".
std::string AdaptationMethodName(AdaptationMethod method);

struct OnlineAdaptationOptions {
  AdaptationMethod method = AdaptationMethod::kFmllr;
  // The first update once this many stream frames were gathered (300: 3 s
  // at 100 frames/s), then one every update_every_frames (0: no more).
  int64_t start_after_frames = 300;
  int64_t update_every_frames = 500;
  // MAP: the means' prior weight, in frames (Kaldi's --mean-tau).
  double map_tau = 10.0;
  // fMLLR: counts and fallbacks (FmllrOptions).
  FmllrOptions fmllr;
  // Which posteriors count (state_posteriors.h).
  PosteriorPolicy posteriors;
};

// INVALID_ARGUMENT naming the field: negative frame counts, start 0, a
// negative or non-finite tau or count, silence states out of the model's
// range, a silence threshold outside [0, 1].
absl::Status ValidateOnlineAdaptation(const OnlineAdaptationOptions& options,
                                      const DiagGmmModel& model);

// One update's result.
struct AdaptationUpdate {
  uint64_t version = 0;  // 1, 2, ... per update of the stream
  AdaptationMethod method = AdaptationMethod::kFmllr;
  int64_t frames = 0;    // stream frames [0, frames) made it
  double count = 0.0;    // posterior mass gathered (fMLLR beta; MAP occupancy)
  // The auxiliary objective's gain over the unadapted start, per unit of
  // count: fMLLR's F(W) - F(I) (Jacobian included); MAP's Q(means) - Q(old
  // means) over the Gaussians' sufficient statistics.
  double gain_per_frame = 0.0;
  std::string mode;  // fMLLR: "full", "diag", "offset", "none"; MAP: "map-means"
  std::string reason;  // why not full (fMLLR), as FmllrReport::reason
  // fMLLR: D x (D+1) [A | b], float64 as estimated, and as scored (float32).
  std::vector<double> transform_values;
  std::shared_ptr<const FeatureTransform> transform;
  // MAP: the adapted model (same states and Gaussians, new means).
  std::shared_ptr<const DiagGmmModel> model;
};

class OnlineAdapter {
 public:
  // INVALID_ARGUMENT: a null model, or ValidateOnlineAdaptation's errors.
  // `fmllr_accumulator` (fMLLR only; null: made here when AddChunk first
  // needs it, unless UseFmllrAccumulator gives one first) is the model's
  // FmllrAccumulator: immutable and large (float64 terms of every Gaussian,
  // 200 MB for 5000 x 32 x 39), so streams of one model share one.
  static absl::StatusOr<std::unique_ptr<OnlineAdapter>> Create(
      std::shared_ptr<const DiagGmmModel> model, const OnlineAdaptationOptions& options,
      std::shared_ptr<const FmllrAccumulator> fmllr_accumulator = nullptr);

  // Adds a chunk's statistics: `frames` (T x D, raw, as the client sent
  // them) under `pairs` (frame indices within the chunk, targets = states;
  // see state_posteriors.h for making them). Counts the T frames for the
  // schedule whether or not any pair survived. INVALID_ARGUMENT (nothing
  // added) for a bad frame width, frame index, state or weight.
  absl::Status AddChunk(ConstMatrixView frames, absl::Span<const StatsPair> pairs);

  // fMLLR statistics gathered elsewhere from this stream's frames (by the
  // backend that scored them, kernels/score/fmllr_gather.h), added to those
  // of AddChunk. INVALID_ARGUMENT for MAP or statistics of another
  // dimension (nothing added).
  absl::Status AddGathered(const FmllrStats& stats);

  // The stream's frames through the last chunk given, when some were
  // gathered elsewhere (AddGathered) and so never counted by AddChunk: the
  // count only moves forward.
  void AdvanceTo(int64_t frames) { frames_ = std::max(frames_, frames); }

  // The shared accumulator for an adapter made without one (see Create),
  // before its first AddChunk. INVALID_ARGUMENT for one of another
  // dimension or a null one.
  absl::Status UseFmllrAccumulator(std::shared_ptr<const FmllrAccumulator> accumulator);
  bool has_fmllr_accumulator() const { return fmllr_accumulator_ != nullptr; }

  // Whether the schedule asks for an update now.
  bool UpdateDue() const { return next_update_ > 0 && frames_ >= next_update_; }

  // Estimates from everything gathered so far and moves the schedule on.
  // Errors of the estimation itself (none expected for valid statistics;
  // degenerate ones fall back, see fmllr_estimate.h).
  absl::StatusOr<AdaptationUpdate> Update();

  // Frames buffered before fMLLR statistics are gathered from them.
  static constexpr int64_t kFlushFrames = 256;

  int64_t frames() const { return frames_; }
  uint64_t version() const { return version_; }
  const OnlineAdaptationOptions& options() const { return options_; }

 private:
  // MAP: one touched Gaussian's occupancy and first-order sum.
  struct MeanSums {
    double occupancy = 0.0;
    std::vector<double> sum;  // D
  };

  OnlineAdapter(std::shared_ptr<const DiagGmmModel> model, const OnlineAdaptationOptions& options,
                std::shared_ptr<const FmllrAccumulator> fmllr_accumulator);
  absl::Status AddMapStats(ConstMatrixView frames, absl::Span<const StatsPair> pairs);
  // fMLLR: the buffered frames' statistics, then an empty buffer.
  absl::Status FlushFmllr();
  absl::StatusOr<AdaptationUpdate> UpdateFmllr();
  absl::StatusOr<AdaptationUpdate> UpdateMapMeans() const;

  const std::shared_ptr<const DiagGmmModel> model_;
  const OnlineAdaptationOptions options_;
  const ModelShape shape_;  // for the checks of each chunk
  std::shared_ptr<const FmllrAccumulator> fmllr_accumulator_;  // fMLLR only
  FmllrStats fmllr_stats_;
  // fMLLR: frames (rows that have pairs) and their pairs, not yet gathered.
  std::vector<float> pending_frames_;
  std::vector<StatsPair> pending_pairs_;
  int64_t pending_rows_ = 0;
  absl::flat_hash_map<int64_t, MeanSums> mean_sums_;  // MAP: by Gaussian
  double map_count_ = 0.0;
  int64_t frames_ = 0;
  int64_t next_update_ = 0;  // 0: no more updates
  uint64_t version_ = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_ONLINE_ADAPTATION_H_
