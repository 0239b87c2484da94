#include "kernels/train/stats_pass.h"

#include <algorithm>

#include "kernels/core/status_macros.h"

namespace gmmscore {

std::vector<TrainingBlock> BlocksOfFrames(ConstMatrixView frames, int64_t max_frames) {
  std::vector<TrainingBlock> blocks;
  for (int64_t first = 0; first < frames.rows; first += max_frames) {
    const int64_t count = std::min(max_frames, frames.rows - first);
    TrainingBlock& block = blocks.emplace_back();
    block.frames = FloatMatrix(count, frames.cols);
    for (int64_t t = 0; t < count; ++t) {
      std::copy_n(frames.row(first + t), frames.cols, block.frames.row(t));
    }
  }
  return blocks;
}

StatsPass::StatsPass(StatsBackend* backend, const std::vector<TrainingBlock>* blocks)
    : backend_(backend), blocks_(blocks) {}

absl::StatusOr<GmmStats> StatsPass::Run(const DiagGmmModel& model, int num_sets,
                                        const Progress& progress) {
  GMM_RETURN_IF_ERROR(backend_->SetModel(model));
  int64_t bytes = 0;
  for (const TrainingBlock& block : *blocks_) bytes += block.frames.rows() * block.frames.cols() * 4;
  const bool keep = bytes <= backend_->frame_memory_budget();
  GmmStats stats = GmmStats::ForModel(model, num_sets);
  const int64_t count = static_cast<int64_t>(blocks_->size());
  for (int64_t i = 0; i < count; ++i) {
    const TrainingBlock& block = (*blocks_)[i];
    std::unique_ptr<FrameBlock> streamed;
    const FrameBlock* loaded = nullptr;
    if (keep && static_cast<int64_t>(resident_.size()) > i) {
      loaded = resident_[i].get();
    } else {
      GMM_ASSIGN_OR_RETURN(streamed, backend_->LoadFrames(block.frames.view()));
      loaded = streamed.get();
      if (keep) resident_.push_back(std::move(streamed));
    }
    GMM_RETURN_IF_ERROR(backend_->Accumulate(*loaded, block.pairs, &stats));
    if (progress) progress(i + 1, count);
  }
  return stats;
}

}  // namespace gmmscore
