#include "kernels/cuda/device_selection.h"

#include <algorithm>

#include "kernels/core/status_macros.h"

namespace gmmscore {

absl::Status DeviceSelection::Queue(absl::Span<const ScoreWindow> jobs, const std::vector<bool>& selected,
                                    const float* scores, absl::Span<const int64_t> score_offsets,
                                    cudaStream_t stream) {
  windows_.clear();
  segments_.clear();
  rows_ = 0;
  slots_ = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ScoreWindow& job = jobs[j];
    if (!selected[j] || job.features.rows == 0 || job.model->num_states() == 0) continue;
    SelectSegment segment;
    segment.first_row = rows_;
    segment.scores_offset = score_offsets[j];
    segment.slots_offset = slots_;
    segment.rows = static_cast<int32_t>(job.features.rows);
    segment.states = job.model->num_states();
    segment.top_k = std::min(job.select.top_k, segment.states);  // Selects: < states
    segment.beam = job.select.beam;
    windows_.push_back(static_cast<int>(j));
    segments_.push_back(segment);
    rows_ += segment.rows;
    slots_ += int64_t{segment.rows} * segment.top_k;
  }
  if (segments_.empty()) return absl::OkStatus();

  const size_t out_bytes = (rows_ + 2 * slots_) * sizeof(uint32_t);
  GMM_RETURN_IF_ERROR(EnsureCapacity(host_out_, out_bytes));
  GMM_RETURN_IF_ERROR(EnsureCapacity(device_out_, out_bytes));
  GMM_RETURN_IF_ERROR(StageToDevice(segments_.data(), segments_.size(), host_segments_, device_segments_, stream,
                                    "copy selection segments to device"));
  char* out = device_out_.data();
  GMM_RETURN_IF_ERROR(LaunchStateSelect(device_segments_.data(), static_cast<int>(segments_.size()), rows_, scores,
                                        reinterpret_cast<int32_t*>(out),
                                        reinterpret_cast<uint32_t*>(out + rows_ * sizeof(uint32_t)),
                                        reinterpret_cast<float*>(out + (rows_ + slots_) * sizeof(uint32_t)),
                                        stream));
  GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_out_.data(), out, out_bytes, cudaMemcpyDeviceToHost, stream),
                           "copy selected states to host");
  return absl::OkStatus();
}

void DeviceSelection::Finish(absl::Span<const ScoreWindow> jobs) {
  const char* out = host_out_.data();
  const auto* counts = reinterpret_cast<const int32_t*>(out);
  const auto* ids = reinterpret_cast<const uint32_t*>(out + rows_ * sizeof(uint32_t));
  const auto* values = reinterpret_cast<const float*>(out + (rows_ + slots_) * sizeof(uint32_t));
  for (size_t w = 0; w < windows_.size(); ++w) {
    const SelectSegment& segment = segments_[w];
    SparseScores sparse;
    sparse.num_states = segment.states;
    sparse.frame_offsets.reserve(segment.rows + 1);
    for (int32_t t = 0; t < segment.rows; ++t) {
      const int64_t slots = segment.slots_offset + int64_t{t} * segment.top_k;
      const int32_t count = counts[segment.first_row + t];
      sparse.state_ids.insert(sparse.state_ids.end(), ids + slots, ids + slots + count);
      sparse.values.insert(sparse.values.end(), values + slots, values + slots + count);
      sparse.frame_offsets.push_back(static_cast<uint32_t>(sparse.state_ids.size()));
    }
    jobs[windows_[w]].result->sparse = std::move(sparse);
  }
  windows_.clear();
  segments_.clear();
}

}  // namespace gmmscore
