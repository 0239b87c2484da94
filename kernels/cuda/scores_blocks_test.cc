// PlaceScores without a GPU: the copies it plans, carried out on host
// buffers over random batches, put every whole window's scores exactly where
// its placement says, in blocks that do not overlap.
#include "kernels/cuda/scores_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

int kModelA, kModelB;

struct Batch {
  std::vector<PlanWindow> windows;
  std::vector<int64_t> floats;  // rows x states
  BatchPlan plan;
};

Batch RandomBatch(std::mt19937& rng, bool frame_totals) {
  Batch batch;
  const int n = 1 + static_cast<int>(rng() % 40);
  for (int j = 0; j < n; ++j) {
    const int* model = rng() % 2 ? &kModelA : &kModelB;
    PlanWindow w{.model = model,
                 .rows = rng() % 6 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 30),
                 .dim = 13,
                 .num_states = model == &kModelA ? 57 : 300,
                 .num_gaussians = 800};
    w.selected = rng() % 6 == 0;
    w.halved = !w.selected && rng() % 6 == 0;
    w.fused_only = !w.selected && !w.halved && rng() % 9 == 0;
    batch.windows.push_back(w);
    batch.floats.push_back(w.rows * w.num_states);
  }
  batch.plan = PlanBatch(batch.windows, {.frame_totals = frame_totals});
  return batch;
}

// Up to `limit` blocks of `floats` each, NaN-filled.
struct BlockSource {
  int64_t floats;
  int limit;
  int made = 0;
  std::shared_ptr<float> operator()() {
    if (made == limit) return nullptr;
    ++made;
    std::shared_ptr<float> block(new float[floats], std::default_delete<float[]>());
    std::fill(block.get(), block.get() + floats, NAN);
    return block;
  }
};

TEST(ScoresBlocksTest, WithoutBlocksTheCopiesAreThePlansRanges) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 300; ++round) {
    const Batch batch = RandomBatch(rng, round % 2 == 0);
    const ScoresPlacement placed =
        PlaceScores(batch.plan, batch.floats, 1 << 20, [] { return std::shared_ptr<float>(); });
    ASSERT_EQ(placed.copies.size(), batch.plan.copy_ranges.size());
    for (size_t c = 0; c < placed.copies.size(); ++c) {
      EXPECT_EQ(placed.copies[c].block, -1);
      EXPECT_EQ(placed.copies[c].device_offset, batch.plan.copy_ranges[c].first);
      EXPECT_EQ(placed.copies[c].host_offset, batch.plan.copy_ranges[c].first);
      EXPECT_EQ(placed.copies[c].count, batch.plan.copy_ranges[c].second - batch.plan.copy_ranges[c].first);
    }
    EXPECT_TRUE(placed.blocks.empty());
    for (int b : placed.block_of) EXPECT_EQ(b, -1);
  }
}

TEST(ScoresBlocksTest, RandomBatchesLandWhereTheirPlacementSays) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 500; ++round) {
    SCOPED_TRACE(testing::Message() << "round " << round);
    const Batch batch = RandomBatch(rng, rng() % 2 == 0);
    const BatchPlan& plan = batch.plan;
    // Blocks from a third of a window of the larger model to several windows;
    // sometimes too few of them.
    BlockSource source{.floats = 100 + static_cast<int64_t>(rng() % 40000),
                       .limit = rng() % 3 == 0 ? static_cast<int>(rng() % 4) : 1000};
    const ScoresPlacement placed = PlaceScores(plan, batch.floats, source.floats, std::ref(source));
    ASSERT_EQ(static_cast<int>(placed.blocks.size()), source.made);

    // Carry out the copies from a device buffer of distinct values, into a
    // host buffer of the size the lane gives it.
    std::vector<float> device(plan.out_floats), host(HostFloats(placed), NAN);
    for (size_t i = 0; i < device.size(); ++i) device[i] = static_cast<float>(i);
    for (const ScoresCopy& copy : placed.copies) {
      ASSERT_GT(copy.count, 0);
      ASSERT_LE(copy.device_offset + copy.count, plan.out_floats);
      float* to = copy.block < 0 ? host.data() : placed.blocks.at(copy.block).get();
      const int64_t room = copy.block < 0 ? static_cast<int64_t>(host.size()) : source.floats;
      ASSERT_LE(copy.host_offset + copy.count, room);
      std::memcpy(to + copy.host_offset, device.data() + copy.device_offset, copy.count * sizeof(float));
    }
    std::vector<std::vector<std::pair<int64_t, int64_t>>> taken(placed.blocks.size());
    for (size_t j = 0; j < batch.windows.size(); ++j) {
      const int64_t floats = batch.floats[j];
      if (!plan.whole[j] || floats == 0) {
        EXPECT_EQ(placed.block_of[j], -1);
        continue;
      }
      if (placed.block_of[j] < 0) {
        ASSERT_LE(plan.scores_offset[j] + floats, static_cast<int64_t>(host.size())) << "window " << j;
      }
      const float* got = placed.block_of[j] < 0 ? host.data() + plan.scores_offset[j]
                                                : placed.blocks[placed.block_of[j]].get() + placed.block_offset[j];
      if (placed.block_of[j] >= 0) {
        EXPECT_LE(placed.block_offset[j] + floats, source.floats);
        taken[placed.block_of[j]].emplace_back(placed.block_offset[j], placed.block_offset[j] + floats);
      } else if (source.made < source.limit) {
        EXPECT_GT(floats, source.floats) << "a window that fits a block was left out";
      }
      EXPECT_EQ(std::memcmp(got, device.data() + plan.scores_offset[j], floats * sizeof(float)), 0)
          << "window " << j;
    }
    for (auto& ranges : taken) {
      std::sort(ranges.begin(), ranges.end());
      for (size_t r = 1; r < ranges.size(); ++r) EXPECT_LE(ranges[r - 1].second, ranges[r].first);
    }
    if (plan.frame_totals) {
      ASSERT_EQ(static_cast<int64_t>(host.size()), plan.scores_floats + plan.total_frames);
      EXPECT_EQ(std::memcmp(host.data() + plan.scores_floats, device.data() + plan.scores_floats,
                            plan.total_frames * sizeof(float)),
                0);
    }
  }
}

// The lane's host buffer holds what is copied there and no more: nothing
// for a batch of top_k, half or fused-only windows, or one whose scores all
// fit blocks; its frame totals; the end of the last window left to it.
TEST(ScoresBlocksTest, TheHostBufferHoldsWhatIsCopiedThereAndNoMore) {
  std::vector<PlanWindow> windows;
  for (int j = 0; j < 3; ++j) {
    windows.push_back({.model = &kModelA, .rows = 10, .dim = 13, .num_states = 57,
                       .num_gaussians = 800, .selected = j == 0, .halved = j == 1,
                       .fused_only = j == 2});
  }
  const std::vector<int64_t> floats(3, 570);
  auto none = [] { return std::shared_ptr<float>(); };
  BatchPlan plan = PlanBatch(windows, {});
  EXPECT_EQ(HostFloats(PlaceScores(plan, floats, 1 << 20, none)), 0);
  plan = PlanBatch(windows, {.frame_totals = true});
  EXPECT_EQ(HostFloats(PlaceScores(plan, floats, 1 << 20, none)), 3 * 570 + 30);

  for (PlanWindow& w : windows) w.selected = w.halved = w.fused_only = false;
  plan = PlanBatch(windows, {});
  BlockSource enough{.floats = 2000, .limit = 10};
  EXPECT_EQ(HostFloats(PlaceScores(plan, floats, enough.floats, std::ref(enough))), 0);
  BlockSource one{.floats = 600, .limit = 1};  // the first window's; the others to the host
  EXPECT_EQ(HostFloats(PlaceScores(plan, floats, one.floats, std::ref(one))), 3 * 570);
}

// Items of 60, 60, 30 in blocks of 100 with one block to give: the second
// finds none and is copied; the third still fits the first block's room.
TEST(ScoresBlocksTest, OutOfBlocksAnItemThatFitsTheLastBlocksRoomGoesThere) {
  BlockSource source{.floats = 100, .limit = 1};
  const std::vector<int64_t> counts = {60, 60, 30}, offsets = {0, 60, 120};
  const ScoresPlacement placed = PackInBlocks(counts, offsets, 100, std::ref(source));
  ASSERT_EQ(placed.blocks.size(), 1u);
  EXPECT_EQ(placed.block_of, (std::vector<int>{0, -1, 0}));
  EXPECT_EQ(placed.block_offset[2], 60);
  ASSERT_EQ(placed.copies.size(), 3u);
  EXPECT_EQ(placed.copies[1], (ScoresCopy{.block = -1, .device_offset = 60, .host_offset = 60, .count = 60}));
  EXPECT_EQ(placed.copies[2], (ScoresCopy{.block = 0, .device_offset = 120, .host_offset = 60, .count = 30}));
}

// A scheduler's batch: 200 chunks of 10 frames of a 5000-state model, in
// blocks of 8 MiB: 41 chunks (200 KB each) a block, one copy a block.
TEST(ScoresBlocksTest, ABatchOfOneKindIsOneCopyABlock) {
  Batch batch;
  for (int j = 0; j < 200; ++j) {
    batch.windows.push_back({.model = &kModelA, .rows = 10, .dim = 39, .num_states = 5000, .num_gaussians = 160000});
    batch.floats.push_back(10 * 5000);
  }
  batch.plan = PlanBatch(batch.windows, {.frame_totals = true});
  BlockSource source{.floats = (8 << 20) / 4, .limit = 1000};
  const ScoresPlacement placed = PlaceScores(batch.plan, batch.floats, source.floats, std::ref(source));
  EXPECT_EQ(placed.blocks.size(), 5u);
  EXPECT_EQ(placed.copies.size(), placed.blocks.size() + 1);  // and the totals
  EXPECT_EQ(placed.copies.back().block, -1);
}

}  // namespace
}  // namespace gmmscore
