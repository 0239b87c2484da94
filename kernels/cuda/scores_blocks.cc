#include "kernels/cuda/scores_blocks.h"

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

ScoresPlacement PlaceScores(const BatchPlan& plan, absl::Span<const int64_t> window_floats,
                            int64_t block_floats,
                            absl::FunctionRef<std::shared_ptr<float>()> take) {
  const size_t count = window_floats.size();
  ScoresPlacement placed{.block_of = std::vector<int>(count, -1),
                         .block_offset = std::vector<int64_t>(count, 0)};
  int64_t used = block_floats;  // of the last block: none yet
  bool out_of_blocks = false;
  for (size_t j = 0; j < count; ++j) {
    const int64_t floats = window_floats[j];
    if (!plan.whole[j] || floats == 0) continue;
    const int64_t offset = plan.scores_offset[j];
    if (!out_of_blocks && floats <= block_floats && used + floats > block_floats) {
      std::shared_ptr<float> block = take();
      out_of_blocks = block == nullptr;
      if (!out_of_blocks) {
        placed.blocks.push_back(std::move(block));
        used = 0;
      }
    }
    if (out_of_blocks || floats > block_floats) {
      AddCopy({.block = -1, .device_offset = offset, .host_offset = offset, .count = floats},
              &placed.copies);
      continue;
    }
    placed.block_of[j] = static_cast<int>(placed.blocks.size()) - 1;
    placed.block_offset[j] = used;
    AddCopy({.block = placed.block_of[j], .device_offset = offset, .host_offset = used, .count = floats},
            &placed.copies);
    used += floats;
  }
  if (plan.frame_totals) {
    AddCopy({.block = -1,
             .device_offset = plan.scores_floats,
             .host_offset = plan.scores_floats,
             .count = plan.total_frames},
            &placed.copies);
  }
  return placed;
}

}  // namespace gmmscore
