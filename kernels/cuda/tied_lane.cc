// ScoreTiedOnLane (lane_scoring.h): tied-mixture windows on one lane, laid
// out by the same BatchPlan as untied ones (runs only, no algorithm choice,
// transforms applied while packing).
#include <cstring>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/lane_scoring.h"
#include "kernels/cuda/loglik_launch.h"

namespace gmmscore {
namespace {

// Every window's frames into lane.host_in (transformed on the host where a
// window has a transform), then one copy in.
absl::Status CopyInTiedFrames(Lane& lane, absl::Span<const ScoreWindow> jobs,
                              const BatchPlan& plan) {
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ConstMatrixView& features = jobs[j].features;
    float* packed = lane.host_in.data() + plan.in_offset[j];
    if (features.rows == 0) continue;
    if (jobs[j].transform != nullptr) {
      jobs[j].transform->ApplyUnchecked(features, packed);
    } else {
      for (int64_t t = 0; t < features.rows; ++t) {
        std::memcpy(packed + t * features.cols, features.row(t), features.cols * sizeof(float));
      }
    }
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.features.data(), lane.host_in.data(),
                                           plan.in_floats * sizeof(float), cudaMemcpyHostToDevice,
                                           lane.stream.get()),
                           "copy tied-model features to device");
  return absl::OkStatus();
}

}  // namespace

absl::Status ScoreTiedOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs,
                             absl::Span<const TiedMixtureDevice* const> resident,
                             const ScoreOptions& options) {
  std::vector<PlanWindow> windows(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    windows[j] = {.model = resident[j],
                  .rows = jobs[j].features.rows,
                  .dim = static_cast<int>(jobs[j].features.cols),
                  .num_states = jobs[j].model->num_states()};
  }
  const BatchPlan plan =
      PlanBatch(windows, {.frame_totals = options.frame_totals, .choose_algorithms = false});
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_in, plan.in_floats));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.host_out, plan.out_floats));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.features, plan.in_floats));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.loglikes, plan.out_floats));
  GMM_RETURN_IF_ERROR(CopyInTiedFrames(lane, jobs, plan));
  cudaStream_t stream = lane.stream.get();
  for (const BatchPlan::Run& run : plan.runs) {
    const TiedMixtureDevice& model = *resident[run.first];
    float* scores = lane.loglikes.data() + plan.scores_offset[run.first];
    GMM_RETURN_IF_ERROR(model.Launch(lane.features.data() + plan.in_offset[run.first],
                                     run.frames, scores, lane.tied, stream));
    if (plan.frame_totals) {
      GMM_RETURN_IF_ERROR(LaunchFrameTotals(
          scores, run.frames, windows[run.first].num_states,
          lane.loglikes.data() + plan.scores_floats + plan.totals_offset[run.first], stream));
    }
  }
  for (const auto& [first, end] : plan.copy_ranges) {
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.host_out.data() + first,
                                             lane.loglikes.data() + first,
                                             (end - first) * sizeof(float), cudaMemcpyDeviceToHost,
                                             stream),
                             "copy tied-model scores to host");
  }
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run tied-mixture kernels");
  for (size_t j = 0; j < jobs.size(); ++j) {
    ScoreResult* result = jobs[j].result;
    const int64_t rows = jobs[j].features.rows;
    if (rows == 0) continue;
    std::memcpy(result->loglikes.data(), lane.host_out.data() + plan.scores_offset[j],
                rows * windows[j].num_states * sizeof(float));
    if (plan.frame_totals) {
      const float* totals = lane.host_out.data() + plan.scores_floats + plan.totals_offset[j];
      result->frame_totals.assign(totals, totals + rows);
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
