#include "kernels/cuda/device_halves.h"

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {

bool DeviceHalves::Encodes(const ScoreWindow& window) {
  return window.half_from_best && window.select.dense();
}

absl::Status DeviceHalves::Queue(absl::Span<const ScoreWindow> jobs, const std::vector<bool>& halved,
                                 const float* scores, absl::Span<const int64_t> score_offsets,
                                 cudaStream_t stream) {
  windows_.clear();
  segments_.clear();
  rows_ = 0;
  values_ = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ScoreWindow& job = jobs[j];
    // A window of no frames has its empty HalfScores already
    // (CudaBackend's PrepareResults): nothing to launch or copy.
    if (!halved[j] || job.features.rows == 0) continue;
    windows_.push_back(static_cast<int>(j));
    HalfSegment segment;
    segment.first_row = rows_;
    segment.scores_offset = score_offsets[j];
    segment.halves_offset = values_;
    segment.rows = static_cast<int32_t>(job.features.rows);
    segment.states = job.model->num_states();
    segments_.push_back(segment);
    rows_ += segment.rows;
    values_ += int64_t{segment.rows} * segment.states;
  }
  if (rows_ == 0) return absl::OkStatus();

  // Bests first: floats, then the 2-byte halves, both naturally aligned.
  const size_t out_bytes = rows_ * sizeof(float) + values_ * sizeof(uint16_t);
  GMM_RETURN_IF_ERROR(EnsureCapacity(host_out_, out_bytes));
  GMM_RETURN_IF_ERROR(EnsureCapacity(device_out_, out_bytes));
  GMM_RETURN_IF_ERROR(StageToDevice(segments_.data(), segments_.size(), host_segments_, device_segments_, stream,
                                    "copy half-encoding segments to device"));
  char* out = device_out_.data();
  GMM_RETURN_IF_ERROR(LaunchHalfEncode(device_segments_.data(), static_cast<int>(segments_.size()), rows_, scores,
                                       reinterpret_cast<float*>(out),
                                       reinterpret_cast<uint16_t*>(out + rows_ * sizeof(float)), stream));
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_out_.data(), out, out_bytes, cudaMemcpyDeviceToHost, stream),
                           "copy half-precision scores to host");
  return absl::OkStatus();
}

void DeviceHalves::Finish(absl::Span<const ScoreWindow> jobs) {
  const char* out = host_out_.data();
  const auto* best = reinterpret_cast<const float*>(out);
  const auto* halves = reinterpret_cast<const uint16_t*>(out + rows_ * sizeof(float));
  for (size_t w = 0; w < windows_.size(); ++w) {
    const HalfSegment& segment = segments_[w];
    HalfScores half;
    half.num_states = segment.states;
    half.frame_best.assign(best + segment.first_row, best + segment.first_row + segment.rows);
    const uint16_t* first = halves + segment.halves_offset;
    half.values.assign(first, first + int64_t{segment.rows} * segment.states);
    jobs[windows_[w]].result->half = std::move(half);
  }
  windows_.clear();
  segments_.clear();
}

}  // namespace gmmscore
