#include "kernels/cuda/device_halves.h"

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {

bool DeviceHalves::Encodes(const ScoreWindow& window) {
  return window.half_from_best && window.select.dense();
}

absl::Status DeviceHalves::Queue(absl::Span<const ScoreWindow> jobs, const std::vector<bool>& halved,
                                 const float* scores, absl::Span<const int64_t> score_offsets,
                                 cudaStream_t stream, PinnedBlockPool* pool) {
  windows_.clear();
  segments_.clear();
  placed_ = ScoresPlacement();
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
  if (pool != nullptr) placed_ = PlaceHalves(*pool);
  if (placed_.blocks.empty()) {
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_out_.data(), out, out_bytes, cudaMemcpyDeviceToHost, stream),
                             "copy half-precision scores to host");
    return absl::OkStatus();
  }
  GMM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host_out_.data(), out, rows_ * sizeof(float), cudaMemcpyDeviceToHost, stream),
      "copy frame bests to host");
  const auto* device_halves = reinterpret_cast<const uint16_t*>(out + rows_ * sizeof(float));
  for (const ScoresCopy& copy : placed_.copies) {
    GMM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(HalvesAt(copy.block) + copy.host_offset,
                                             device_halves + copy.device_offset,
                                             copy.count * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream),
                             "copy half-precision scores to host");
  }
  return absl::OkStatus();
}

ScoresPlacement DeviceHalves::PlaceHalves(PinnedBlockPool& pool) const {
  std::vector<int64_t> counts, offsets;
  for (const HalfSegment& segment : segments_) {
    counts.push_back(int64_t{segment.rows} * segment.states);
    offsets.push_back(segment.halves_offset);
  }
  return PackInBlocks(counts, offsets, static_cast<int64_t>(pool.block_bytes() / sizeof(uint16_t)),
                      [&pool] { return pool.Take(); });
}

uint16_t* DeviceHalves::HalvesAt(int block) const {
  if (block >= 0) return reinterpret_cast<uint16_t*>(placed_.blocks[block].get());
  return reinterpret_cast<uint16_t*>(host_out_.data() + rows_ * sizeof(float));
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
    const int64_t count = int64_t{segment.rows} * segment.states;
    const int block = placed_.blocks.empty() ? -1 : placed_.block_of[w];
    if (block >= 0) {
      const std::shared_ptr<float>& owner = placed_.blocks[block];
      half.values = BlockArray<uint16_t>::OnBlock(
          std::shared_ptr<uint16_t>(owner, HalvesAt(block) + placed_.block_offset[w]), count);
    } else {
      const uint16_t* first = halves + segment.halves_offset;
      half.values.assign(first, first + count);
    }
    jobs[windows_[w]].result->half = std::move(half);
  }
  windows_.clear();
  segments_.clear();
  placed_ = ScoresPlacement();
}

}  // namespace gmmscore
