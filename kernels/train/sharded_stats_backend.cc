#include "kernels/train/sharded_stats_backend.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

// One shard of a block: rows [first_row, first_row + its rows) of the
// frames given to LoadFrames, held by backend `backend`.
struct Shard {
  int backend = 0;
  int64_t first_row = 0;
  std::unique_ptr<FrameBlock> block;
};

class ShardedFrameBlock : public FrameBlock {
 public:
  ShardedFrameBlock(const void* owner, std::vector<Shard> shards, int64_t rows, int dim)
      : owner_(owner), shards_(std::move(shards)), rows_(rows), dim_(dim) {}
  int64_t num_frames() const override { return rows_; }
  int dim() const override { return dim_; }
  const void* owner() const { return owner_; }
  const std::vector<Shard>& shards() const { return shards_; }

 private:
  const void* owner_;
  std::vector<Shard> shards_;
  int64_t rows_;
  int dim_;
};

// Runs task(k) for k in [0, count) on one thread each (the calling thread
// takes the last) and returns the first failure in k order.
absl::Status RunEach(int count, const std::function<absl::Status(int)>& task) {
  std::vector<absl::Status> results(count);
  std::vector<std::thread> threads;
  for (int k = 0; k + 1 < count; ++k) threads.emplace_back([&, k] { results[k] = task(k); });
  if (count > 0) results[count - 1] = task(count - 1);
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) GMM_RETURN_IF_ERROR(status);
  return absl::OkStatus();
}

class ShardedStatsBackend : public StatsBackend {
 public:
  explicit ShardedStatsBackend(std::vector<std::unique_ptr<StatsBackend>> backends)
      : backends_(std::move(backends)) {}

  std::string name() const override { return backends_.front()->name(); }

  absl::Status SetModel(const DiagGmmModel& model) override {
    has_model_ = false;
    GMM_RETURN_IF_ERROR(RunEach(static_cast<int>(backends_.size()),
                                [&](int k) { return backends_[k]->SetModel(model); }));
    shape_ = ModelShape::Of(model);
    has_model_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    GMM_RETURN_IF_ERROR(ValidateFrames(frames));
    const int64_t per_shard = ShardRows(frames.rows);
    std::vector<Shard> shards;
    for (int k = 0; k < static_cast<int>(backends_.size()) && k * per_shard < frames.rows; ++k) {
      shards.push_back({k, k * per_shard, nullptr});
    }
    GMM_RETURN_IF_ERROR(RunEach(static_cast<int>(shards.size()), [&](int s) -> absl::Status {
      const int64_t rows = std::min(per_shard, frames.rows - shards[s].first_row);
      GMM_ASSIGN_OR_RETURN(shards[s].block,
                           backends_[shards[s].backend]->LoadFrames(frames.Rows(shards[s].first_row, rows)));
      return absl::OkStatus();
    }));
    return std::unique_ptr<FrameBlock>(
        new ShardedFrameBlock(this, std::move(shards), frames.rows, static_cast<int>(frames.cols)));
  }

  absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs, GmmStats* stats) override {
    const auto* sharded = dynamic_cast<const ShardedFrameBlock*>(&block);
    if (sharded == nullptr || sharded->owner() != this) {
      return absl::InvalidArgumentError("the frame block was not loaded by this sharded statistics backend");
    }
    GMM_RETURN_IF_ERROR(ValidateStatsRequest(has_model_ ? &shape_ : nullptr, block.num_frames(), block.dim(),
                                             pairs, *stats));
    const std::vector<Shard>& shards = sharded->shards();
    const int64_t per_shard = ShardRows(block.num_frames());
    // Each shard's pairs, frames counted from its first row, in request order.
    std::vector<std::vector<StatsPair>> shard_pairs(shards.size());
    for (const StatsPair& pair : pairs) {
      const int64_t s = pair.frame / per_shard;
      StatsPair local = pair;
      local.frame = static_cast<int32_t>(pair.frame - shards[s].first_row);
      shard_pairs[s].push_back(local);
    }
    // A global GMM's shard takes every frame of its block (no pairs); a
    // shard that no pair reaches has nothing to add. Each shard that runs
    // sums into statistics of its own, the size of the model's (K of them
    // per call: the price of adding in a fixed order).
    auto runs = [&](size_t s) { return pairs.empty() || !shard_pairs[s].empty(); };
    std::vector<GmmStats> sums(shards.size());
    for (size_t s = 0; s < shards.size(); ++s) {
      if (runs(s)) sums[s] = GmmStats::ForShape(stats->dim, stats->state_offsets, stats->num_sets);
    }
    GMM_RETURN_IF_ERROR(RunEach(static_cast<int>(shards.size()), [&](int s) -> absl::Status {
      if (!runs(s)) return absl::OkStatus();
      return backends_[shards[s].backend]->Accumulate(*shards[s].block, shard_pairs[s], &sums[s]);
    }));
    for (size_t s = 0; s < shards.size(); ++s) {
      if (!runs(s)) continue;
      sums[s].flags = stats->flags;
      GMM_RETURN_IF_ERROR(stats->Add(sums[s]));
    }
    return absl::OkStatus();
  }

  // Every shard gets an even share, so the whole holds K times the least.
  int64_t frame_memory_budget() const override {
    int64_t least = std::numeric_limits<int64_t>::max();
    for (const auto& backend : backends_) least = std::min(least, backend->frame_memory_budget());
    return least > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(backends_.size())
               ? std::numeric_limits<int64_t>::max()
               : least * static_cast<int64_t>(backends_.size());
  }

 private:
  int64_t ShardRows(int64_t rows) const {
    const int64_t count = static_cast<int64_t>(backends_.size());
    return std::max<int64_t>(1, (rows + count - 1) / count);
  }

  std::vector<std::unique_ptr<StatsBackend>> backends_;
  bool has_model_ = false;
  ModelShape shape_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StatsBackend>> CreateShardedStatsBackend(
    std::vector<std::unique_ptr<StatsBackend>> backends) {
  if (backends.empty()) return absl::InvalidArgumentError("a sharded statistics backend needs backends");
  for (const auto& backend : backends) {
    if (backend == nullptr) return absl::InvalidArgumentError("a sharded statistics backend got a null backend");
  }
  return std::unique_ptr<StatsBackend>(new ShardedStatsBackend(std::move(backends)));
}

}  // namespace gmmscore
