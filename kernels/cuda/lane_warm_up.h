// Warm-up calls on one lane (lane_pool.h), for CudaBackend::WarmUp
// (ScoringBackend::WarmUp): calls of one model of every size a daemon's
// batches take, up to shape.frames, once for each kind of answer, so that
// the lane's buffers reach their full size and the kernels those sizes pick
// are loaded before the first client's call needs them.
//
//   LaneLease lane = lanes->AcquireLane(i);
//   GMM_RETURN_IF_ERROR(WarmLane(*lane, model, CudaModelOf(model), shape,
//                                {.wgmma_available = wgmma, .scores_pool = pool, .gather = target}));
//
// The kernels' slice partials are sized for every run length up to
// shape.frames, not only the calls': they are not monotonic in the frames.
// An untied model is also warmed fused (pairs of its windows: a fusion's
// staging and fused outputs), adapting (every window its own speaker
// transform; where a target is given, fMLLR gathering sized for a full call
// and run in the smallest) and in a multi-model launch (its kernel, and its
// job table sized for a job a frame).
// Not warmed (each grows its buffers at its first call): top_k above
// shape.top_k, beams, and calls past shape.frames (a unary request, a first
// chunk over the cap).
#ifndef GMMSCORE_KERNELS_CUDA_LANE_WARM_UP_H_
#define GMMSCORE_KERNELS_CUDA_LANE_WARM_UP_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_models.h"
#include "kernels/cuda/lane_pool.h"
#include "kernels/cuda/pinned_block_pool.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// The frames of each warm-up call: 16, 32, 64, ... while below `frames`,
// then `frames` (one size, `frames`, when it is 16 or less). Each kernel
// regime of loglik_policy.h (it picks by frames per model) is met once.
std::vector<int64_t> WarmUpSizes(int64_t frames);

// What a lane's calls use beside the lane: the backend's.
struct LaneWarmUpTools {
  bool wgmma_available = false;
  PinnedBlockPool* scores_pool = nullptr;  // null: none
  // A target made for the model (CreateFmllrGather) for the adapting calls
  // to gather into; null: they do not gather.
  FmllrGatherTarget* gather = nullptr;
};

// Sizes the lane's slice partials for runs of `model` of up to shape.frames
// frames, then scores zero frames of it (`cuda`: what it is on this
// device) on `lane` in windows of shape.window_frames: answered whole with
// frame totals in calls of WarmUpSizes(shape.frames) frames; for an untied
// model also as top_k, in half precision, fused in pairs and adapting in
// one call of shape.frames each (their buffers grow with the frames), a
// gathering call of the smallest size, and a multi-model launch.
// Synchronises the lane before it returns OK.
absl::Status WarmLane(Lane& lane, const PreparedModel& model, const CudaModel& cuda, const WarmUpShape& shape,
                      const LaneWarmUpTools& tools);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LANE_WARM_UP_H_
