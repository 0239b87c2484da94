// What the CUDA backend does on a leased lane (lane_pool.h), one file each:
//   untied_lane.cc    untied windows: pack, transform, launch runs, select,
//                     copy back (and fuse on the device, device_fusion.cc)
//   tied_lane.cc      tied-mixture windows
//   device_fusion.cc  fusions of untied windows, on the device
// Each queues its work on the lane's stream and synchronises before it
// returns OK; on an error the lease waits for what was queued.
#ifndef GMMSCORE_KERNELS_CUDA_LANE_SCORING_H_
#define GMMSCORE_KERNELS_CUDA_LANE_SCORING_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/cuda/batch_plan.h"
#include "kernels/cuda/device_model.h"
#include "kernels/cuda/lane_pool.h"
#include "kernels/cuda/pinned_block_pool.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Untied windows (resident[j]: jobs[j]'s model on the device): one copy in
// of every window's frames (and of each distinct speaker transform), the
// transforms, the launches of the plan's runs, the copies out of every
// window's scores (and frame totals) and one synchronisation. A window asking
// for its top_k states gets them selected on the device (DeviceSelection):
// only they are copied out; one asking for half precision and not fused
// gets its scores encoded there (DeviceHalves): only the halves come out.
// With `fusions` (indices into `jobs`), every run's frame totals are
// computed and FuseOnLane fuses after the synchronisation.
// Whole scores (neither selected, halved nor fused only) are copied into
// blocks of `scores_pool` where it has them and the call has no fusions:
// each such result's loglikes is then a FloatMatrix on a block
// (FloatMatrix::OnBlock), which no host copy touched; device-encoded halves
// likewise (HalfScores::values on a block). Otherwise, or with no pool,
// they are copied into results of their own. This sizes the whole
// windows' loglikes; the caller resets the others.
absl::Status ScoreUntiedOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs,
                               absl::Span<const DeviceModel* const> resident,
                               const ScoreOptions& options, absl::Span<const FusionJob> fusions,
                               bool wgmma_available, PinnedBlockPool* scores_pool);

// The doubles of lane.gather_terms one gathering window of `rows` frames of
// dimension `dim` takes (fmllr_gather_launch.h: 1 + 2D a frame).
inline int64_t GatherTermValues(int64_t rows, int dim) { return rows * (1 + 2 * static_cast<int64_t>(dim)); }

// Sizes the lane's fMLLR gathering buffers for `windows` gathering windows
// whose terms take `term_values` doubles in all (ScoreUntiedOnLane's own
// sizing; lane_warm_up.h reserves them ahead).
absl::Status ReserveGathers(Lane& lane, int64_t windows, int64_t term_values);

// Tied-mixture windows: one copy in, one TiedMixtureDevice::Launch per run
// of consecutive windows of one model, their frame totals, one copy out, one
// synchronisation. A window's speaker transform is applied on the host while
// packing (FeatureTransform::ApplyUnchecked, as the base ScoreBatch does),
// not on the device as for untied models: the tied path reads each stream's
// slice of the transformed frame, and transforms are rare next to the
// codebook work. resident[j]: jobs[j]'s model on the device.
absl::Status ScoreTiedOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs,
                             absl::Span<const TiedMixtureDevice* const> resident,
                             const ScoreOptions& options);

// The fusions of ScoreUntiedOnLane, once every run's frame totals (and the
// scores of windows whose own scores are wanted) are in lane.host_out, laid
// out by `plan`, and the window scores still on the device:
//   1. per fusion, the log weights on the host (ModelFusion::NextLogWeights:
//      the float64 posterior window), staged with one FusionSegment each;
//   2. one copy in, one fusion launch (LaunchFusion), one copy out of the
//      fused scores, fused totals and per-frame winners, and synchronise.
// Windows fused only never leave the device: for ten speaker-cluster models
// that is one tenth of the copy and none of the host-side log-sum-exp work.
absl::Status FuseOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs, const BatchPlan& plan,
                        absl::Span<const FusionJob> fusions);

// Fuses windows of no frames: nothing to copy, only the outputs' shapes (and
// a window that moves by zero frames).
absl::Status FuseEmpty(absl::Span<const ScoreWindow> jobs, const FusionJob& fusion);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LANE_SCORING_H_
