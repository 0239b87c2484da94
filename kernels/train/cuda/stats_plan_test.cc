// The statistics planner (host only): grouping, the tile layout, and that
// every chunk's plan covers each (pair, Gaussian tile) exactly once with
// partial slots its reduction ranges add up.
#include "kernels/train/cuda/stats_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cuda/stats_policy.h"

namespace gmmscore {
namespace train_cuda {
namespace {

TEST(GroupStatsPairsTest, StableByTargetWithTotals) {
  const std::vector<StatsPair> pairs = {{5, 2, 0.5f}, {1, 0, 1.0f}, {3, 2, 0.25f}, {0, 0, 2.0f}, {9, 4, 0.0f}};
  std::vector<PairRecord> storage(pairs.size());
  const GroupedPairs grouped = GroupStatsPairs(pairs, 10, 6, absl::MakeSpan(storage));
  EXPECT_FALSE(grouped.identity);
  const std::vector<int32_t> frames = {1, 0, 5, 3, 9};
  const std::vector<float> weights = {1.0f, 2.0f, 0.5f, 0.25f, 0.0f};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(grouped.records[i].frame, frames[i]);
    EXPECT_EQ(grouped.records[i].weight, weights[i]);
  }
  ASSERT_EQ(grouped.segments.size(), 3u);
  EXPECT_EQ(grouped.segments[0].target, 0);
  EXPECT_EQ(grouped.segments[1].target, 2);
  EXPECT_EQ(grouped.segments[1].begin, 2);
  EXPECT_EQ(grouped.segments[1].end, 4);
  EXPECT_EQ(grouped.segments[2].target, 4);
  EXPECT_DOUBLE_EQ(grouped.total_weight, 3.75);
}

// Large requests are sliced over threads: the same grouping (stable within
// a target) and the slice-ordered weight sum.
TEST(GroupStatsPairsTest, SlicedGroupingIsStable) {
  std::mt19937 random(3);
  std::vector<StatsPair> pairs;
  for (int i = 0; i < 1'000'000; ++i) {
    pairs.push_back({static_cast<int32_t>(random() % 500000), static_cast<int32_t>(random() % 300),
                     static_cast<float>(random() % 100) / 64.0f});
  }
  std::vector<PairRecord> storage(pairs.size());
  const GroupedPairs grouped = GroupStatsPairs(pairs, 500000, 300, absl::MakeSpan(storage));
  std::vector<StatsPair> sorted = pairs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const StatsPair& a, const StatsPair& b) { return a.target < b.target; });
  double total = 0.0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    ASSERT_EQ(storage[i].frame, sorted[i].frame) << i;
    ASSERT_EQ(storage[i].weight, sorted[i].weight) << i;
    total += pairs[i].weight;
  }
  EXPECT_EQ(grouped.total_weight, total);  // multiples of 1/64: exact in any order
  ASSERT_EQ(grouped.segments.size(), 300u);
  EXPECT_EQ(grouped.segments.back().end, 1'000'000);
}

TEST(GroupStatsPairsTest, EmptyPairsAreEveryFrame) {
  const GroupedPairs grouped = GroupStatsPairs({}, 7, 1, {});
  EXPECT_TRUE(grouped.identity);
  EXPECT_EQ(grouped.num_pairs, 7);
  ASSERT_EQ(grouped.segments.size(), 1u);
  EXPECT_EQ(grouped.segments[0].end, 7);
  EXPECT_DOUBLE_EQ(grouped.total_weight, 7.0);
  EXPECT_TRUE(GroupStatsPairs({}, 0, 1, {}).segments.empty());
}

TEST(BuildStatsTilesTest, TransposedTilesWithPadding) {
  for (int dim : {3, 39, 60}) {
    auto model = GenerateSyntheticModel({.num_states = 3, .min_gaussians = 1, .max_gaussians = 80, .dim = dim, .seed = 4});
    ASSERT_TRUE(model.ok());
    const int tile = ChooseTileGaussians(*model);
    EXPECT_EQ(tile, dim > kMaxTile64Dim ? 32 : tile);
    const StatsTiles tiles = BuildStatsTiles(*model, tile);
    EXPECT_EQ(tiles.tile_gaussians, tile);
    const int64_t floats = TileFloats(dim, tile);
    ASSERT_EQ(static_cast<int64_t>(tiles.params.size()), tiles.num_tiles() * floats);
    for (int s = 0; s < model->num_states(); ++s) {
      const int count = model->num_gaussians_in_state(s);
      const int num_tiles = tiles.state_first_tile[s + 1] - tiles.state_first_tile[s];
      EXPECT_EQ(num_tiles, (count + tile - 1) / tile);
      for (int j = 0; j < num_tiles * tile; ++j) {
        const int32_t t = tiles.state_first_tile[s] + j / tile;
        EXPECT_EQ(tiles.single_tile[t], num_tiles == 1 ? 1 : 0);
        EXPECT_EQ(tiles.tile_in_state[t], j / tile);
        const float* base = &tiles.params[t * floats];
        const int i = j % tile;
        if (j >= count) {
          EXPECT_EQ(base[i], kPaddingGconst);
          continue;
        }
        const float* row = model->params().row(model->state_offsets()[s] + j);
        EXPECT_EQ(base[i], row[0]);
        for (int d = 0; d < dim; ++d) {
          EXPECT_EQ(base[tile + d * tile + i], row[1 + d]);
          EXPECT_EQ(base[tile + (dim + d) * tile + i], row[1 + dim + d]);
        }
      }
    }
  }
}

// A kept-score row holds the largest state of several tiles, padding
// included; states of one tile (scored by the statistics kernel itself)
// need none.
TEST(KeptScoreRowFloatsTest, LargestStateOfSeveralTiles) {
  auto mixed = GenerateSyntheticModel({.num_states = 40, .min_gaussians = 1, .max_gaussians = 200, .dim = 5, .seed = 6});
  ASSERT_TRUE(mixed.ok());
  for (int tile : {32, 64}) {
    int64_t want = 0;
    for (int s = 0; s < mixed->num_states(); ++s) {
      const int64_t tiles_of_state = (mixed->num_gaussians_in_state(s) + tile - 1) / tile;
      if (tiles_of_state > 1) want = std::max(want, tiles_of_state * tile);
    }
    ASSERT_GT(want, 0);
    EXPECT_EQ(KeptScoreRowFloats(BuildStatsTiles(*mixed, tile)), want) << tile;
  }
  auto small = GenerateSyntheticModel({.num_states = 9, .min_gaussians = 16, .max_gaussians = 32, .dim = 5, .seed = 7});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(KeptScoreRowFloats(BuildStatsTiles(*small, 32)), 0);
  auto global = GenerateSyntheticModel({.num_states = 1, .min_gaussians = 2048, .max_gaussians = 2048, .dim = 5, .seed = 8});
  ASSERT_TRUE(global.ok());
  EXPECT_EQ(KeptScoreRowFloats(BuildStatsTiles(*global, 64)), 2048);
}

// The tensor-core rows are the model's parameter rows, zero-padded to
// TcCols, with TF32-exact padding Gaussians.
TEST(BuildTcTilesTest, ParameterRowsPaddedToTheMmaDepth) {
  for (int dim : {1, 13, 39, 40, 43}) {
    auto model = GenerateSyntheticModel({.num_states = 3, .min_gaussians = 1, .max_gaussians = 150, .dim = dim, .seed = 5});
    ASSERT_TRUE(model.ok());
    const StatsTiles tiles = BuildStatsTiles(*model, kTcTile);
    const std::vector<float> tc = BuildTcTiles(tiles);
    const int cols = TcCols(dim);
    EXPECT_EQ(cols % 8, 0);
    EXPECT_GE(cols, 2 * dim + 1);
    EXPECT_LT(cols, 2 * dim + 9);
    ASSERT_EQ(static_cast<int64_t>(tc.size()), int64_t{tiles.num_tiles()} * kTcTile * cols);
    for (int s = 0; s < model->num_states(); ++s) {
      const int count = model->num_gaussians_in_state(s);
      for (int j = 0; j < (tiles.state_first_tile[s + 1] - tiles.state_first_tile[s]) * kTcTile; ++j) {
        const float* row = &tc[(int64_t{tiles.state_first_tile[s]} * kTcTile + j) * cols];
        if (j >= count) {
          EXPECT_EQ(row[0], kTcPaddingGconst);
          for (int k = 1; k < cols; ++k) EXPECT_EQ(row[k], 0.0f);
          continue;
        }
        const float* want = model->params().row(model->state_offsets()[s] + j);
        for (int k = 0; k <= 2 * dim; ++k) EXPECT_EQ(row[k], want[k]) << "dim " << dim << " row " << j << " k " << k;
        for (int k = 2 * dim + 1; k < cols; ++k) EXPECT_EQ(row[k], 0.0f);
      }
    }
  }
  // -2^127: a power of two, so TF32 holds it exactly (no rest to split).
  EXPECT_EQ(kTcPaddingGconst, -std::ldexp(1.0f, 127));
}

// Every (pair, tile) of the chunk exactly once; slots a permutation of each
// batch's items; each output's range holds exactly its own items.
void CheckPlan(const GroupedPairs& grouped, const StatsTiles& tiles, const DiagGmmModel& model, int64_t chunk,
               int64_t target_items, int32_t max_items) {
  const int num_states = model.num_states();
  std::map<std::pair<int64_t, int32_t>, int> covered;   // (pair, tile) -> count
  std::map<int64_t, int> lse_covered;                   // pair -> count
  for (int64_t begin = 0; begin < grouped.num_pairs; begin += chunk) {
    const int64_t end = std::min(grouped.num_pairs, begin + chunk);
    const ChunkPlan plan = PlanChunk(grouped, begin, end, tiles, model.state_offsets(), target_items, max_items);
    for (const LseItem& item : plan.lse_items) {
      ASSERT_LE(item.pair_end - item.pair_begin, kPairsPerTile);
      ASSERT_GT(item.num_tiles, 1);
      for (int p = item.pair_begin; p < item.pair_end; ++p) ++lse_covered[begin + p];
    }
    for (const StatsBatch& batch : plan.batches) {
      ASSERT_LE(static_cast<int32_t>(batch.items.size()), max_items);
      ASSERT_EQ(batch.ranges.size(), batch.outputs.size());
      std::vector<int> slot_item(batch.items.size(), -1);
      for (size_t k = 0; k < batch.items.size(); ++k) {
        const StatsItem& item = batch.items[k];
        ASSERT_GE(item.slot, 0);
        ASSERT_LT(item.slot, static_cast<int32_t>(batch.items.size()));
        ASSERT_EQ(slot_item[item.slot], -1) << "slot used twice";
        slot_item[item.slot] = static_cast<int>(k);
        ASSERT_LT(item.pair_begin, item.pair_end);
        for (int p = item.pair_begin; p < item.pair_end; ++p) ++covered[{begin + p, item.tile}];
      }
      int32_t next = 0, next_row = 0;
      for (size_t o = 0; o < batch.outputs.size(); ++o) {
        ASSERT_EQ(batch.ranges[o].item_begin, next);
        next = batch.ranges[o].item_end;
        const int state = batch.outputs[o].target % num_states;
        ASSERT_EQ(batch.ranges[o].out_row, next_row);
        const int64_t first = int64_t{batch.outputs[o].tile_in_state} * tiles.tile_gaussians;
        EXPECT_EQ(batch.ranges[o].rows,
                  std::min<int64_t>(tiles.tile_gaussians, model.num_gaussians_in_state(state) - first));
        next_row += batch.ranges[o].rows;
        for (int32_t s = batch.ranges[o].item_begin; s < batch.ranges[o].item_end; ++s) {
          const StatsItem& item = batch.items[slot_item[s]];
          EXPECT_EQ(item.tile, tiles.state_first_tile[state] + batch.outputs[o].tile_in_state);
          // The item's pairs all belong to the output's target.
          for (const TargetSegment& seg : grouped.segments) {
            if (begin + item.pair_begin >= seg.begin && begin + item.pair_begin < seg.end) {
              EXPECT_EQ(seg.target, batch.outputs[o].target);
              EXPECT_LE(begin + item.pair_end, seg.end);
            }
          }
        }
      }
      ASSERT_EQ(next, static_cast<int32_t>(batch.items.size()));
      ASSERT_EQ(next_row, batch.rows);
    }
  }
  for (const TargetSegment& seg : grouped.segments) {
    const int state = seg.target % num_states;
    const int first = tiles.state_first_tile[state], last = tiles.state_first_tile[state + 1];
    for (int64_t p = seg.begin; p < seg.end; ++p) {
      for (int32_t t = first; t < last; ++t) ASSERT_EQ((covered[{p, t}]), 1) << "pair " << p << " tile " << t;
      ASSERT_EQ(lse_covered[p], last - first > 1 ? 1 : 0);
    }
  }
  int64_t total = 0;
  for (const auto& [key, count] : covered) total += count;
  int64_t expected = 0;
  for (const TargetSegment& seg : grouped.segments) {
    const int state = seg.target % num_states;
    expected += (seg.end - seg.begin) * (tiles.state_first_tile[state + 1] - tiles.state_first_tile[state]);
  }
  EXPECT_EQ(total, expected);
}

TEST(PlanChunkTest, CoversEveryPairAndTileOnce) {
  auto model = GenerateSyntheticModel({.num_states = 9, .min_gaussians = 1, .max_gaussians = 300, .dim = 13, .seed = 5});
  ASSERT_TRUE(model.ok());
  std::mt19937 random(6);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < 3000; ++t) {
    if (random() % 4 == 0) continue;
    pairs.push_back({t, static_cast<int32_t>(random() % 18), 1.0f});  // 2 sets, state 0 of set 1 too
  }
  std::vector<PairRecord> storage(pairs.size());
  const GroupedPairs grouped = GroupStatsPairs(pairs, 3000, 18, absl::MakeSpan(storage));
  for (int tile : {64, 32}) {
    const StatsTiles tiles = BuildStatsTiles(*model, tile);
    for (int64_t chunk : {int64_t{64}, int64_t{1000}, int64_t{1} << 20}) {
      for (int32_t max_items : {1, 5, 64, 100000}) {
        for (int64_t target : {1, 50, 5000}) {
          SCOPED_TRACE(testing::Message() << "tile " << tile << " chunk " << chunk << " max_items " << max_items
                                          << " target " << target);
          CheckPlan(grouped, tiles, *model, chunk, target, max_items);
        }
      }
    }
  }
}

TEST(ChooseTileGaussiansTest, SmallStatesGetNarrowTiles) {
  auto hmm = GenerateSyntheticModel({.num_states = 50, .min_gaussians = 16, .max_gaussians = 32, .dim = 39, .seed = 8});
  auto ubm = GenerateSyntheticModel({.num_states = 1, .min_gaussians = 512, .max_gaussians = 512, .dim = 39, .seed = 8});
  auto wide = GenerateSyntheticModel({.num_states = 1, .min_gaussians = 512, .max_gaussians = 512, .dim = 60, .seed = 8});
  ASSERT_TRUE(hmm.ok() && ubm.ok() && wide.ok());
  EXPECT_EQ(ChooseTileGaussians(*hmm), 32);
  EXPECT_EQ(ChooseTileGaussians(*ubm), 64);
  EXPECT_EQ(ChooseTileGaussians(*wide), 32);
}

TEST(PlanChunkTest, GlobalGmmSplitsIntoAboutTheTargetItems) {
  auto model = GenerateSyntheticModel({.num_states = 1, .min_gaussians = 2048, .max_gaussians = 2048, .dim = 39, .seed = 7});
  ASSERT_TRUE(model.ok());
  ASSERT_EQ(ChooseTileGaussians(*model), 64);
  const StatsTiles tiles = BuildStatsTiles(*model, 64);
  const GroupedPairs grouped = GroupStatsPairs({}, 2'000'000, 1, {});
  const ChunkPlan plan = PlanChunk(grouped, 0, 2'000'000, tiles, model->state_offsets(), 1056, 1638);
  ASSERT_EQ(plan.batches.size(), 1u);
  EXPECT_GE(plan.batches[0].items.size(), 1000u);
  EXPECT_LE(plan.batches[0].items.size(), 1100u);
  EXPECT_EQ(plan.batches[0].outputs.size(), 32u);
  EXPECT_EQ(plan.lse_items.size(), 31250u);
  EXPECT_EQ(plan.batches[0].rows, 2048);
  CheckPlan(GroupStatsPairs({}, 5000, 1, {}), tiles, *model, 5000, 100, 1000);
}

}  // namespace
}  // namespace train_cuda
}  // namespace gmmscore
