// Device-side entry points of the likelihood kernels: everything on the
// caller's stream, device pointers in and out, no host synchronisation.
// The backend (cuda_backend.cc) and the benchmark call these.
//
//   GMM_RETURN_IF_ERROR(LaunchLoglik(resident, Algorithm::kFused16, d_features,
//                                    num_frames, d_loglikes, workspace, stream));
#ifndef GMMSCORE_KERNELS_CUDA_LOGLIK_LAUNCH_H_
#define GMMSCORE_KERNELS_CUDA_LOGLIK_LAUNCH_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

// Scratch of the launches, grown on demand, one per CUDA stream.
struct LoglikWorkspace {
  cublasHandle_t cublas = nullptr;      // two-kernel path; bound to the launch stream
  DeviceBuffer<float> expanded;         // two-kernel path: frames x (1 + 2D): [1, y, y^2]
  DeviceBuffer<float> gaussian_scores;  // two-kernel path: frames x Gtot
  DeviceBuffer<float> slice_partials;   // split and blocked kernels: (max, sum) per slice, frame, state
  DeviceBuffer<char> job_table;         // multi-model launch: one SplitJob per model
};

// Scores `num_frames` frames (row-major num_frames x dim, device memory)
// into `loglikes` (num_frames x num_states, device memory) with `algorithm`
// (kAuto resolves through ChooseAlgorithm). `workspace` holds scratch for kGemm,
// kSplit8 and the sliced launches of kFused8x2 and kFused8x4 (at most
// kMaxSlicePartialBytes).
absl::Status LaunchLoglik(const DeviceModel& model, Algorithm algorithm, const float* features,
                          int64_t num_frames, float* loglikes, LoglikWorkspace& workspace,
                          cudaStream_t stream);

// The floats of workspace.slice_partials that LaunchLoglik of `algorithm`
// over `num_frames` frames of `model` uses on the current device (0 where
// it takes none): a caller sizes the workspace before any launch needs it
// (lane_warm_up.h). Not monotonic in the frames: a few sizes slice more.
absl::StatusOr<int64_t> SlicePartialFloats(const DeviceModel& model, Algorithm algorithm, int64_t num_frames);

// One model's window in a multi-model launch (device pointers).
struct LoglikJob {
  const DeviceModel* model = nullptr;
  const float* features = nullptr;  // num_frames x dim
  int64_t num_frames = 0;
  float* loglikes = nullptr;        // num_frames x num_states
};

// Scores every job with the split kernel in ONE launch (a flat grid over all
// jobs' frame tiles and state blocks). The small job table is copied from
// pageable memory, so the call returns once it is staged. Only split8 (and
// kAuto where it picks split8) has a multi-model kernel; the other
// algorithms, fused8x4 included, score a batch with one LaunchLoglik per run.
absl::Status LaunchMultiModelLoglik(absl::Span<const LoglikJob> jobs, LoglikWorkspace& workspace,
                                    cudaStream_t stream);

// The bytes of workspace.job_table that LaunchMultiModelLoglik of `jobs`
// jobs with frames uses: a caller sizes it before a launch needs it
// (lane_warm_up.h).
size_t MultiModelJobTableBytes(int64_t jobs);

// totals[t] = log sum_s exp(loglikes[t][s]).
absl::Status LaunchFrameTotals(const float* loglikes, int64_t num_frames, int num_states,
                               float* totals, cudaStream_t stream);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LOGLIK_LAUNCH_H_
