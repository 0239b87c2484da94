#include "kernels/train/cuda/stats_plan.h"

#include <algorithm>
#include <thread>

#include "kernels/train/cuda/stats_policy.h"

namespace gmmscore {
namespace train_cuda {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

GroupedPairs GroupStatsPairs(absl::Span<const StatsPair> pairs, int64_t num_frames, int32_t num_targets,
                             absl::Span<PairRecord> records) {
  GroupedPairs grouped;
  if (pairs.empty()) {
    grouped.identity = true;
    grouped.num_pairs = num_frames;
    grouped.total_weight = static_cast<double>(num_frames);
    if (num_frames > 0) grouped.segments.push_back({0, 0, num_frames});
    return grouped;
  }
  const int64_t n = static_cast<int64_t>(pairs.size());
  grouped.num_pairs = n;
  grouped.records = records.data();
  // Slices: enough pairs per slice that the per-slice count tables (one
  // entry per target) stay small against the pairs.
  const int slices = static_cast<int>(
      std::clamp<int64_t>(n / std::max<int64_t>(kGroupSlicePairs, 4 * int64_t{num_targets}), 1, kGroupSlices));
  const size_t targets = static_cast<size_t>(num_targets);
  std::vector<int64_t> table(static_cast<size_t>(slices) * targets, 0);  // counts, then starts
  std::vector<double> weight(slices, 0.0);
  auto run = [&](auto body) {  // body(slice, first pair, end pair) on `slices` threads
    std::vector<std::thread> threads;
    for (int k = 1; k < slices; ++k) threads.emplace_back(body, k, n * k / slices, n * (k + 1) / slices);
    body(0, int64_t{0}, n / slices);
    for (std::thread& thread : threads) thread.join();
  };
  run([&](int k, int64_t begin, int64_t end) {
    int64_t* counts = &table[k * targets];
    double sum = 0.0;
    for (int64_t i = begin; i < end; ++i) {
      ++counts[pairs[i].target];
      sum += pairs[i].weight;
    }
    weight[k] = sum;
  });
  // Each (target, slice) starts after every earlier target and, within the
  // target, after the earlier slices: the scatter below is stable.
  int64_t next = 0;
  for (size_t t = 0; t < targets; ++t) {
    const int64_t begin = next;
    for (int k = 0; k < slices; ++k) {
      const int64_t count = table[k * targets + t];
      table[k * targets + t] = next;
      next += count;
    }
    if (next > begin) grouped.segments.push_back({static_cast<int32_t>(t), begin, next});
  }
  PairRecord* out = records.data();
  run([&](int k, int64_t begin, int64_t end) {
    int64_t* starts = &table[k * targets];
    for (int64_t i = begin; i < end; ++i) out[starts[pairs[i].target]++] = PairRecord{pairs[i].frame, pairs[i].weight};
  });
  for (double w : weight) grouped.total_weight += w;
  return grouped;
}

int ChooseTileGaussians(const DiagGmmModel& model) {
  if (model.dim() > kMaxTile64Dim) return 32;
  int64_t scored64 = 0, scored32 = 0;  // Gaussians scored, padding included
  for (int s = 0; s < model.num_states(); ++s) {
    const int64_t count = model.num_gaussians_in_state(s);
    scored64 += CeilDiv(count, 64) * 64;
    scored32 += CeilDiv(count, 32) * 32;
  }
  return kTile32RelativeCost * static_cast<double>(scored32) < static_cast<double>(scored64) ? 32 : 64;
}

StatsTiles BuildStatsTiles(const DiagGmmModel& model, int tile) {
  StatsTiles tiles;
  const int dim = model.dim();
  tiles.dim = dim;
  tiles.tile_gaussians = tile;
  tiles.state_first_tile.assign(1, 0);
  for (int s = 0; s < model.num_states(); ++s) {
    const int count = static_cast<int>(CeilDiv(model.num_gaussians_in_state(s), tile));
    tiles.state_first_tile.push_back(tiles.state_first_tile.back() + count);
    tiles.single_tile.insert(tiles.single_tile.end(), count, count == 1 ? 1 : 0);
    for (int k = 0; k < count; ++k) tiles.tile_in_state.push_back(k);
  }
  const int64_t tile_floats = TileFloats(dim, tile);
  tiles.params.assign(static_cast<size_t>(tiles.num_tiles() * tile_floats), 0.0f);
  const ConstMatrixView params = model.params();
  for (int s = 0; s < model.num_states(); ++s) {
    const int64_t first = model.state_offsets()[s];
    const int64_t count = model.num_gaussians_in_state(s);
    for (int32_t t = tiles.state_first_tile[s]; t < tiles.state_first_tile[s + 1]; ++t) {
      float* base = &tiles.params[static_cast<size_t>(t * tile_floats)];
      float* u = base + tile;
      float* v = u + static_cast<int64_t>(dim) * tile;
      for (int i = 0; i < tile; ++i) {
        const int64_t g = static_cast<int64_t>(t - tiles.state_first_tile[s]) * tile + i;
        if (g >= count) {
          base[i] = kPaddingGconst;  // u and v stay 0
          continue;
        }
        const float* row = params.row(first + g);
        base[i] = row[0];
        for (int d = 0; d < dim; ++d) {
          u[d * tile + i] = row[1 + d];
          v[d * tile + i] = row[1 + dim + d];
        }
      }
    }
  }
  return tiles;
}

int64_t KeptScoreRowFloats(const StatsTiles& tiles) {
  int64_t most = 0;
  for (size_t s = 0; s + 1 < tiles.state_first_tile.size(); ++s) {
    const int64_t count = tiles.state_first_tile[s + 1] - tiles.state_first_tile[s];
    if (count > 1) most = std::max(most, count * tiles.tile_gaussians);
  }
  return most;
}

std::vector<float> BuildTcTiles(const StatsTiles& tiles) {
  const int dim = tiles.dim, tile = tiles.tile_gaussians, cols = TcCols(dim);
  const int64_t tile_floats = TileFloats(dim, tile);
  std::vector<float> out(static_cast<size_t>(int64_t{tiles.num_tiles()} * tile * cols), 0.0f);
  for (int64_t t = 0; t < tiles.num_tiles(); ++t) {
    const float* base = &tiles.params[static_cast<size_t>(t * tile_floats)];
    const float* u = base + tile;
    const float* v = u + static_cast<int64_t>(dim) * tile;
    for (int i = 0; i < tile; ++i) {
      float* row = &out[static_cast<size_t>((t * tile + i) * cols)];
      row[0] = base[i] == kPaddingGconst ? kTcPaddingGconst : base[i];
      for (int d = 0; d < dim; ++d) {
        row[1 + d] = u[d * tile + i];
        row[1 + dim + d] = v[d * tile + i];
      }
    }
  }
  return out;
}

ChunkPlan PlanChunk(const GroupedPairs& grouped, int64_t chunk_begin, int64_t chunk_end,
                    const StatsTiles& tiles, absl::Span<const int64_t> state_offsets, int64_t target_items,
                    int32_t max_items) {
  const int num_states = static_cast<int>(state_offsets.size()) - 1;
  ChunkPlan plan;
  // The segments' parts inside the chunk, relative to its start.
  std::vector<TargetSegment> parts;
  for (const TargetSegment& seg : grouped.segments) {
    const int64_t begin = std::max(seg.begin, chunk_begin);
    const int64_t end = std::min(seg.end, chunk_end);
    if (begin < end) parts.push_back({seg.target, begin - chunk_begin, end - chunk_begin});
  }
  auto tiles_of = [&](int32_t target, int32_t* first) {
    const int state = target % num_states;
    *first = tiles.state_first_tile[state];
    return tiles.state_first_tile[state + 1] - tiles.state_first_tile[state];
  };

  // Work in (pair tile x Gaussian tile) units, and the pair tiles per item.
  int64_t work = 0;
  for (const TargetSegment& part : parts) {
    int32_t first = 0;
    work += tiles_of(part.target, &first) * CeilDiv(part.end - part.begin, kPairsPerTile);
  }
  const int64_t per_item =
      std::max<int64_t>(kMinPairTilesPerItem, CeilDiv(work, std::max<int64_t>(1, target_items)));
  const int64_t range_pairs = per_item * kPairsPerTile;

  StatsBatch batch;
  int32_t out_row = 0;  // rows written so far in this batch
  auto flush = [&]() {
    out_row = 0;
    if (!batch.items.empty()) plan.batches.push_back(std::move(batch));
    batch = StatsBatch();
  };
  for (const TargetSegment& part : parts) {
    int32_t first_tile = 0;
    const int32_t num_tiles = tiles_of(part.target, &first_tile);
    const int64_t state_gaussians =
        state_offsets[part.target % num_states + 1] - state_offsets[part.target % num_states];
    if (num_tiles > 1) {
      for (int64_t p = part.begin; p < part.end; p += kPairsPerTile) {
        plan.lse_items.push_back({static_cast<int32_t>(p),
                                  static_cast<int32_t>(std::min(p + kPairsPerTile, part.end)),
                                  first_tile, num_tiles});
      }
    }
    const int64_t num_ranges = CeilDiv(part.end - part.begin, range_pairs);
    // A block of pair ranges x Gaussian tiles that fits one batch.
    const int64_t ranges_per_block = num_tiles <= max_items ? std::max<int64_t>(1, max_items / num_tiles) : 1;
    const int32_t tiles_per_block = std::min(num_tiles, max_items);
    for (int64_t r0 = 0; r0 < num_ranges; r0 += ranges_per_block) {
      const int64_t r1 = std::min(num_ranges, r0 + ranges_per_block);
      const int32_t nr = static_cast<int32_t>(r1 - r0);
      for (int32_t g0 = 0; g0 < num_tiles; g0 += tiles_per_block) {
        const int32_t g1 = std::min(num_tiles, g0 + tiles_per_block);
        if (static_cast<int64_t>(batch.items.size()) + int64_t{nr} * (g1 - g0) > max_items) flush();
        const int32_t base = static_cast<int32_t>(batch.items.size());
        // Launch order: pair range major; slots: Gaussian tile major, so
        // each output's partials are consecutive.
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t begin = part.begin + r * range_pairs;
          const int64_t end = std::min(part.end, begin + range_pairs);
          for (int32_t g = g0; g < g1; ++g) {
            batch.items.push_back({static_cast<int32_t>(begin), static_cast<int32_t>(end), first_tile + g,
                                   base + (g - g0) * nr + static_cast<int32_t>(r - r0)});
          }
        }
        for (int32_t g = g0; g < g1; ++g) {
          const int32_t rows = static_cast<int32_t>(
              std::min<int64_t>(tiles.tile_gaussians, state_gaussians - int64_t{g} * tiles.tile_gaussians));
          batch.outputs.push_back({part.target, g});
          batch.ranges.push_back({base + (g - g0) * nr, base + (g - g0 + 1) * nr, out_row, rows});
          out_row += rows;
          batch.rows = out_row;
        }
      }
    }
  }
  flush();
  return plan;
}

}  // namespace train_cuda
}  // namespace gmmscore
