// FuseOnLane and FuseEmpty (lane_scoring.h): fusions of untied windows on
// the device.
#include <cstring>
#include <vector>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fusion_launch.h"
#include "kernels/cuda/lane_scoring.h"

namespace gmmscore {

absl::Status FuseEmpty(absl::Span<const ScoreWindow> jobs, const FusionJob& fusion) {
  const ScoreWindow& first = jobs[fusion.windows.front()];
  std::vector<double> log_weights;
  GMM_RETURN_IF_ERROR(fusion.fusion->NextLogWeights({}, 0, &log_weights, fusion.out));
  fusion.out->loglikes.Resize(0, first.model->num_states());
  fusion.out->frame_totals.clear();
  fusion.fusion->SetDominance({}, fusion.out);
  if (!fusion.model_scores) {
    for (int w : fusion.windows) *jobs[w].result = ScoreResult{};
  }
  return absl::OkStatus();
}

namespace {

// What the fusion launch reads (segments, then the models' row pointers,
// then log weights) and where its outputs go: fused scores, then fused
// totals, then winners (int32, same size).
struct FusionStaging {
  std::vector<FusionSegment> segments;
  std::vector<const float*> model_rows;
  std::vector<float> log_weights;
  std::vector<int64_t> fused_offset;  // per fusion: its first fused score
  int64_t fused_count = 0;            // fused scores in all
  int64_t fused_rows = 0;
};

// Per fusion, the log weights on the host (the float64 posterior window over
// the windows' frame totals, from lane.host_out) and one segment.
absl::StatusOr<FusionStaging> StageFusions(const Lane& lane, absl::Span<const ScoreWindow> jobs,
                                           const BatchPlan& plan,
                                           absl::Span<const FusionJob> fusions) {
  FusionStaging staging;
  staging.fused_offset.resize(fusions.size());
  std::vector<double> totals, fusion_log_weights;
  for (size_t f = 0; f < fusions.size(); ++f) {
    const FusionJob& fusion = fusions[f];
    const int num_models = static_cast<int>(fusion.windows.size());
    const int64_t rows = jobs[fusion.windows.front()].features.rows;
    const int states = jobs[fusion.windows.front()].model->num_states();
    totals.resize(rows * num_models);
    for (int m = 0; m < num_models; ++m) {
      const float* window_totals =
          lane.host_out.data() + plan.scores_floats + plan.totals_offset[fusion.windows[m]];
      for (int64_t t = 0; t < rows; ++t) totals[t * num_models + m] = window_totals[t];
    }
    GMM_RETURN_IF_ERROR(
        fusion.fusion->NextLogWeights(totals, rows, &fusion_log_weights, fusion.out));
    staging.fused_offset[f] = staging.fused_count;
    if (rows == 0) continue;
    FusionSegment segment;
    segment.first_row = staging.fused_rows;
    segment.out_offset = staging.fused_count;
    segment.weights_offset = static_cast<int64_t>(staging.log_weights.size());
    segment.totals_offset = fusion.frame_totals ? staging.fused_rows : -1;
    segment.rows = static_cast<int32_t>(rows);
    segment.states = states;
    segment.num_models = num_models;
    segment.models_offset = static_cast<int32_t>(staging.model_rows.size());
    segment.weighted = fusion.fusion->options().method != FusionMethod::kMax;
    staging.segments.push_back(segment);
    for (int w : fusion.windows) {
      staging.model_rows.push_back(lane.loglikes.data() + plan.scores_offset[w]);
    }
    staging.log_weights.insert(staging.log_weights.end(), fusion_log_weights.begin(),
                               fusion_log_weights.end());
    staging.fused_count += rows * states;
    staging.fused_rows += rows;
  }
  return staging;
}

// One copy in, one fusion launch, one copy out to lane.fusion_host_out,
// synchronised.
absl::Status LaunchStagedFusion(Lane& lane, const FusionStaging& staging) {
  cudaStream_t stream = lane.stream.get();
  const size_t segments_bytes = staging.segments.size() * sizeof(FusionSegment);
  const size_t rows_bytes = staging.model_rows.size() * sizeof(const float*);
  const size_t weights_bytes = staging.log_weights.size() * sizeof(float);
  const size_t in_bytes = segments_bytes + rows_bytes + weights_bytes;
  const int64_t fused_count = staging.fused_count, fused_rows = staging.fused_rows;
  const int64_t out_count = fused_count + 2 * fused_rows;
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_host_in, in_bytes));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_in, in_bytes));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_host_out, out_count));
  GMM_RETURN_IF_ERROR(EnsureCapacity(lane.fusion_out, out_count));
  if (fused_rows == 0) return absl::OkStatus();
  char* staged = lane.fusion_host_in.data();
  std::memcpy(staged, staging.segments.data(), segments_bytes);
  std::memcpy(staged + segments_bytes, staging.model_rows.data(), rows_bytes);
  std::memcpy(staged + segments_bytes + rows_bytes, staging.log_weights.data(), weights_bytes);
  GMM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(lane.fusion_in.data(), staged, in_bytes, cudaMemcpyHostToDevice, stream),
      "copy fusion weights to device");
  const char* device_in = lane.fusion_in.data();
  float* fused = lane.fusion_out.data();
  GMM_RETURN_IF_ERROR(LaunchFusion(
      reinterpret_cast<const FusionSegment*>(device_in), static_cast<int>(staging.segments.size()),
      fused_rows, reinterpret_cast<const float* const*>(device_in + segments_bytes),
      reinterpret_cast<const float*>(device_in + segments_bytes + rows_bytes), fused,
      fused + fused_count, reinterpret_cast<int*>(fused + fused_count + fused_rows), stream));
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(lane.fusion_host_out.data(), fused,
                                           out_count * sizeof(float), cudaMemcpyDeviceToHost,
                                           stream),
                           "copy fused scores to host");
  GMM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "run fusion kernel");
  return absl::OkStatus();
}

// Each fusion's fused scores, totals and dominance from lane.fusion_host_out.
void UnpackFusions(const Lane& lane, absl::Span<const ScoreWindow> jobs,
                   const FusionStaging& staging, absl::Span<const FusionJob> fusions) {
  const int64_t fused_count = staging.fused_count;
  const float* host_fused = lane.fusion_host_out.data();
  const int* host_winners =
      reinterpret_cast<const int*>(host_fused + fused_count + staging.fused_rows);
  int64_t row = 0;
  for (size_t f = 0; f < fusions.size(); ++f) {
    const FusionJob& fusion = fusions[f];
    const int64_t rows = jobs[fusion.windows.front()].features.rows;
    const int states = jobs[fusion.windows.front()].model->num_states();
    FusedScores& out = *fusion.out;
    out.loglikes.Resize(rows, states);
    if (rows > 0) {
      std::memcpy(out.loglikes.data(), host_fused + staging.fused_offset[f],
                  rows * states * sizeof(float));
    }
    out.frame_totals.clear();
    if (fusion.frame_totals) {
      out.frame_totals.assign(host_fused + fused_count + row,
                              host_fused + fused_count + row + rows);
    }
    fusion.fusion->SetDominance(absl::MakeConstSpan(host_winners + row, rows), &out);
    row += rows;
  }
}

}  // namespace

absl::Status FuseOnLane(Lane& lane, absl::Span<const ScoreWindow> jobs, const BatchPlan& plan,
                        absl::Span<const FusionJob> fusions) {
  GMM_ASSIGN_OR_RETURN(const FusionStaging staging, StageFusions(lane, jobs, plan, fusions));
  GMM_RETURN_IF_ERROR(LaunchStagedFusion(lane, staging));
  UnpackFusions(lane, jobs, staging, fusions);
  return absl::OkStatus();
}

}  // namespace gmmscore
