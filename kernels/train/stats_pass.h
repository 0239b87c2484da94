// StatsPass: one pass of a StatsBackend over training data held in host
// blocks, keeping the blocks resident in the backend's memory between passes
// when they fit its frame_memory_budget() (EM on a GPU then copies the data
// once), and streaming them through one at a time otherwise.
//
//   std::vector<TrainingBlock> blocks = ...;   // frames + pairs
//   StatsPass pass(backend.get(), &blocks);
//   GMM_ASSIGN_OR_RETURN(GmmStats stats, pass.Run(model, /*num_sets=*/1, on_block));
#ifndef GMMSCORE_KERNELS_TRAIN_STATS_PASS_H_
#define GMMSCORE_KERNELS_TRAIN_STATS_PASS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/core/matrix.h"
#include "kernels/train/gmm_stats.h"
#include "kernels/train/stats_backend.h"

namespace gmmscore {

// Frames and what they contribute to (StatsBackend::Accumulate's pairs;
// empty for a global GMM).
struct TrainingBlock {
  FloatMatrix frames;
  std::vector<StatsPair> pairs;
};

// Splits `frames` into blocks of at most `max_frames` rows (no pairs).
std::vector<TrainingBlock> BlocksOfFrames(ConstMatrixView frames, int64_t max_frames);

class StatsPass {
 public:
  // Called after each block with (blocks done, blocks in all).
  using Progress = std::function<void(int64_t, int64_t)>;

  // Both must outlive the pass; `blocks` must not change between runs.
  StatsPass(StatsBackend* backend, const std::vector<TrainingBlock>* blocks);

  // Statistics of every block under `model`, added in block order.
  absl::StatusOr<GmmStats> Run(const DiagGmmModel& model, int num_sets = 1,
                               const Progress& progress = nullptr);

  // True once the blocks have been made resident (after the first Run, when
  // they fit).
  bool resident() const { return !resident_.empty(); }

 private:
  StatsBackend* backend_;
  const std::vector<TrainingBlock>* blocks_;
  std::vector<std::unique_ptr<FrameBlock>> resident_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_TRAIN_STATS_PASS_H_
