#include "kernels/cuda/scores_blocks.h"

#include <algorithm>

namespace gmmscore {
namespace {

// Appends a copy, or extends the last one where it continues it on both
// sides.
void AddCopy(const ScoresCopy& copy, std::vector<ScoresCopy>* copies) {
  if (copy.count == 0) return;
  if (!copies->empty()) {
    ScoresCopy& last = copies->back();
    if (last.block == copy.block && last.device_offset + last.count == copy.device_offset &&
        last.host_offset + last.count == copy.host_offset) {
      last.count += copy.count;
      return;
    }
  }
  copies->push_back(copy);
}

}  // namespace

ScoresPlacement PackInBlocks(absl::Span<const int64_t> counts, absl::Span<const int64_t> offsets,
                             int64_t capacity, absl::FunctionRef<std::shared_ptr<float>()> take) {
  const size_t count = counts.size();
  ScoresPlacement placed{.block_of = std::vector<int>(count, -1),
                         .block_offset = std::vector<int64_t>(count, 0)};
  int64_t used = capacity;  // of the last block: none yet
  bool out_of_blocks = false;
  for (size_t i = 0; i < count; ++i) {
    const int64_t size = counts[i];
    if (size == 0) continue;
    if (size <= capacity && used + size > capacity && !out_of_blocks) {
      std::shared_ptr<float> block = take();
      out_of_blocks = block == nullptr;
      if (!out_of_blocks) {
        placed.blocks.push_back(std::move(block));
        used = 0;
      }
    }
    // Out of blocks, a later item that fits the last one's room still goes there.
    if (size > capacity || used + size > capacity) {
      AddCopy({.block = -1, .device_offset = offsets[i], .host_offset = offsets[i], .count = size},
              &placed.copies);
      continue;
    }
    placed.block_of[i] = static_cast<int>(placed.blocks.size()) - 1;
    placed.block_offset[i] = used;
    AddCopy({.block = placed.block_of[i], .device_offset = offsets[i], .host_offset = used, .count = size},
            &placed.copies);
    used += size;
  }
  return placed;
}

ScoresPlacement PlaceScores(const BatchPlan& plan, absl::Span<const int64_t> window_floats,
                            int64_t block_floats,
                            absl::FunctionRef<std::shared_ptr<float>()> take) {
  std::vector<int64_t> counts(window_floats.size(), 0);
  for (size_t j = 0; j < counts.size(); ++j) counts[j] = plan.whole[j] ? window_floats[j] : 0;
  ScoresPlacement placed = PackInBlocks(counts, plan.scores_offset, block_floats, take);
  if (plan.frame_totals) {
    AddCopy({.block = -1,
             .device_offset = plan.scores_floats,
             .host_offset = plan.scores_floats,
             .count = plan.total_frames},
            &placed.copies);
  }
  return placed;
}

int64_t HostFloats(const ScoresPlacement& placed) {
  int64_t end = 0;
  for (const ScoresCopy& copy : placed.copies) {
    if (copy.block < 0) end = std::max(end, copy.host_offset + copy.count);
  }
  return end;
}

}  // namespace gmmscore
