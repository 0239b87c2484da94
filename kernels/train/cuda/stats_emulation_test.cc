// The statistics kernels run on the host: each CTA as 256 std::threads with
// a barrier for __syncthreads and per-warp barriers for the shuffles, the
// dynamic shared memory an exact-size heap block (so AddressSanitizer builds
// catch any access past the kernels' layout), scratch filled with NaN. The
// kernels' own source (stats_kernels.cuh) is compiled as C++ with the few
// device intrinsics defined below, and driven the way the backend drives
// them (plan, LSE, statistics per batch, reduction, log-likelihood sum).
// This checks indexing, tiling, planning and synchronisation structure on
// machines without a GPU (CI); exponentials are exact here, so the errors
// are the float32 arithmetic's alone.
#include <cuda_runtime.h>

#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// Device-only spellings, as the host compiler needs them.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

namespace gmmscore {
namespace train_cuda {

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace emulation {
uint32_t mma_a[8][32][4];
uint32_t mma_b[8][32][2];
std::unique_ptr<float4[]> shared;
std::unique_ptr<std::barrier<>> block_barrier;
std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
double warp_values[8][32];
double mma_f64_a[8][32][2];
double mma_f64_b[8][32];
}  // namespace emulation

inline float EmulatedExp(float x) { return std::exp2(x); }
inline void EmulatedCopy(float* shared, const float* global, int floats, int thread, int threads) {
  for (int i = thread * 4; i < floats; i += threads * 4) std::memcpy(shared + i, global + i, 16);
}
inline float* EmulatedShared() { return reinterpret_cast<float*>(emulation::shared.get()); }
inline void __syncthreads() { emulation::block_barrier->arrive_and_wait(); }
inline float __logf(float x) { return std::log(x); }
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// A shuffle's exchange among the warp's lanes, of floats (exact as
// doubles) and doubles.
inline double EmulatedShuffleXorDouble(double value, int mask) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emulation::warp_values[warp][lane] = value;
  emulation::warp_barriers[warp]->arrive_and_wait();
  const double other = emulation::warp_values[warp][lane ^ mask];
  emulation::warp_barriers[warp]->arrive_and_wait();
  return other;
}
inline void EmulatedSyncWarp() { emulation::warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
// __ballot_sync over the whole warp.
inline uint32_t EmulatedBallot(bool vote) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emulation::warp_values[warp][lane] = vote ? 1.0 : 0.0;
  emulation::warp_barriers[warp]->arrive_and_wait();
  uint32_t votes = 0;
  for (int i = 0; i < 32; ++i) votes |= emulation::warp_values[warp][i] != 0.0 ? 1u << i : 0u;
  emulation::warp_barriers[warp]->arrive_and_wait();
  return votes;
}
inline float __shfl_xor_sync(unsigned, float value, int mask) {
  return static_cast<float>(EmulatedShuffleXorDouble(value, mask));
}
using std::min;

// cvt.rna.tf32.f32: to nearest, ties away from zero, 10 mantissa bits.
inline uint32_t EmulatedTf32Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return (bits + 0x1000u) & ~0x1FFFu;
}
inline float FloatOfBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
inline void EmulatedSplitTf32(float v, uint32_t& big, uint32_t& small) {
  big = EmulatedTf32Bits(v);
  small = EmulatedTf32Bits(v - FloatOfBits(big));
}
// mma.sync m16n8k8 TF32 for the calling lane: the warp's fragments are
// gathered (tf32_mma.cuh gives the layout), each lane computes its four
// outputs in float32, k in order. Operands that are not TF32 values (low 13
// bits set: a missing split) abort the test.
inline void EmulatedMmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < 4; ++r) emulation::mma_a[warp][lane][r] = a[r];
  emulation::mma_b[warp][lane][0] = b0;
  emulation::mma_b[warp][lane][1] = b1;
  for (uint32_t bits : {a[0], a[1], a[2], a[3], b0, b1}) {
    if ((bits & 0x1FFFu) != 0) std::abort();
  }
  emulation::warp_barriers[warp]->arrive_and_wait();
  const int group = lane >> 2, thread = lane & 3;
  for (int c = 0; c < 4; ++c) {
    const int row = group + (c >> 1) * 8, col = 2 * thread + (c & 1);
    float sum = d[c];
    for (int k = 0; k < 8; ++k) {
      const float x = FloatOfBits(emulation::mma_a[warp][(row % 8) * 4 + k % 4][(row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)]);
      const float y = FloatOfBits(emulation::mma_b[warp][col * 4 + k % 4][k >= 4 ? 1 : 0]);
      sum += x * y;
    }
    d[c] = sum;
  }
  emulation::warp_barriers[warp]->arrive_and_wait();
}

// mma.sync m16n8k4 .f64 for the calling lane (fragments as in
// stats_dmma_kernel.cuh): the warp's operands gathered, each lane's four
// outputs computed in float64, k in order.
inline void EmulatedMmaF64(double (&d)[4], double a0, double a1, double b) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  emulation::mma_f64_a[warp][lane][0] = a0;
  emulation::mma_f64_a[warp][lane][1] = a1;
  emulation::mma_f64_b[warp][lane] = b;
  emulation::warp_barriers[warp]->arrive_and_wait();
  const int group = lane >> 2, thread = lane & 3;
  for (int c = 0; c < 4; ++c) {
    const int row = group + (c >> 1) * 8, col = 2 * thread + (c & 1);
    double sum = d[c];
    for (int k = 0; k < 4; ++k) {
      sum += emulation::mma_f64_a[warp][(row % 8) * 4 + k][row >= 8 ? 1 : 0] * emulation::mma_f64_b[warp][col * 4 + k];
    }
    d[c] = sum;
  }
  emulation::warp_barriers[warp]->arrive_and_wait();
}

}  // namespace train_cuda
}  // namespace gmmscore

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cuda/stats_dmma_kernel.cuh"
#include "kernels/train/cuda/stats_kernels.cuh"
#include "kernels/train/cuda/stats_tc_kernels.cuh"
#include "kernels/train/cuda/stats_plan.h"
#include "kernels/train/cuda/stats_test_data.h"

namespace gmmscore {
namespace train_cuda {
namespace {

// Runs `kernel(args...)` over `grid` CTAs of kStatsThreads threads, one CTA
// at a time, with `shared_bytes` of dynamic shared memory (NaN at each CTA's
// start: the kernels must not read what they did not write).
template <typename Kernel, typename... Args>
void Launch(int grid, size_t shared_bytes, Kernel kernel, Args... args) {
  if (grid == 0) return;
  const size_t quads = (shared_bytes + 15) / 16;
  emulation::shared.reset(quads > 0 ? new float4[quads] : nullptr);
  emulation::block_barrier = std::make_unique<std::barrier<>>(kStatsThreads);
  emulation::warp_barriers.clear();
  for (int w = 0; w < kStatsThreads / 32; ++w) emulation::warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
  std::vector<std::thread> threads;
  for (int t = 0; t < kStatsThreads; ++t) {
    threads.emplace_back([=] {
      threadIdx = {static_cast<unsigned>(t), 0, 0};
      blockDim = dim3(kStatsThreads);
      gridDim = dim3(grid);
      for (int b = 0; b < grid; ++b) {
        blockIdx = {static_cast<unsigned>(b), 0, 0};
        if (t == 0 && quads > 0) std::memset(emulation::shared.get(), 0xFF, quads * 16);
        __syncthreads();
        kernel(args...);
        __syncthreads();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

template <int N>
using Int = std::integral_constant<int, N>;

template <typename F>
void DispatchEmulated(int dim, int tile, F&& f) {
  const int columns = ColumnsPerThread(dim, tile);
  if (tile == 64) {
    switch (columns) {
      case 1: return f(Int<64>(), Int<1>());
      case 2: return f(Int<64>(), Int<2>());
      case 5: return f(Int<64>(), Int<5>());
      case 6: return f(Int<64>(), Int<6>());
    }
  } else {
    switch (columns) {
      case 1: return f(Int<32>(), Int<1>());
      case 3: return f(Int<32>(), Int<3>());
      case 4: return f(Int<32>(), Int<4>());
      case 8: return f(Int<32>(), Int<8>());
    }
  }
  FAIL() << "dimension " << dim << " tile " << tile << " not instantiated in the emulation";
}

// The float64 tensor-core kernel's instance of `dim`.
void LaunchEmulatedDmma(int dim, int items, const StatsModelView& view, const PairsView& pv, const StatsItem* work,
                        const float* lse_max, const float* lse_log, double* partials, const ScoresView& scores) {
  auto launch = [&](auto kernel, int x_tiles) {
    Launch(items, 4 * stats_dmma_detail::SharedFloats(x_tiles), kernel, view, pv, work, lse_max, lse_log, partials,
           scores);
  };
  switch (stats_dmma_detail::XTiles(dim)) {
    case 1: return launch(KeptStatsDmmaKernel<1, kFp64MmaStepUnroll>, 1);
    case 2: return launch(KeptStatsDmmaKernel<2, kFp64MmaStepUnroll>, 2);
    case 5: return launch(KeptStatsDmmaKernel<5, kFp64MmaStepUnroll>, 5);
  }
  FAIL() << "dimension " << dim << " not instantiated in the float64 tensor-core emulation";
}

struct Bounds {
  int64_t chunk = int64_t{1} << 22;
  int64_t target_items = 16;
  int32_t max_items = 1 << 20;
  int flush_tiles = 0;  // the statistics kernel's accumulation variant
  bool tensor_cores = false;  // stats_tc_kernels.cuh instead (tile 64)
  bool keep_scores = false;   // the LSE kernel keeps the scores, the statistics kernel reads them
  bool fp64_mma = false;      // kept-score items on the float64 tensor-core kernel (stats_dmma_kernel.cuh)
};

// The backend's Accumulate, with emulated launches.
GmmStats EmulatedStats(const DiagGmmModel& model, const FloatMatrix& frames, const std::vector<StatsPair>& pairs,
                       int num_sets, int tile_gaussians, Bounds bounds) {
  const int dim = model.dim();
  const int num_states = model.num_states();
  const StatsTiles tiles = BuildStatsTiles(model, tile_gaussians);
  const int tile = tiles.tile_gaussians;
  const std::vector<float> center(model.center().begin(), model.center().end());
  std::vector<PairRecord> storage(pairs.size());
  const GroupedPairs grouped =
      GroupStatsPairs(pairs, frames.rows(), num_states * num_sets, absl::MakeSpan(storage));
  const std::vector<float> tc_tiles = bounds.tensor_cores ? BuildTcTiles(tiles) : std::vector<float>();
  const StatsModelView view{tiles.params.data(), tiles.single_tile.data(), center.data(), dim, tile,
                            bounds.tensor_cores ? tc_tiles.data() : nullptr, tiles.tile_in_state.data()};
  const int64_t score_row = bounds.keep_scores ? KeptScoreRowFloats(tiles) : 0;
  const int row_doubles = StatsRowDoubles(dim);
  const int64_t block_doubles = int64_t{tile} * row_doubles;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GmmStats stats = GmmStats::ForModel(model, num_sets);
  for (int64_t begin = 0; begin < grouped.num_pairs; begin += bounds.chunk) {
    const int64_t end = std::min(grouped.num_pairs, begin + bounds.chunk);
    const ChunkPlan plan =
        PlanChunk(grouped, begin, end, tiles, model.state_offsets(), bounds.target_items, bounds.max_items);
    PairsView pv;
    pv.frames = frames.data();
    pv.first_frame = begin;
    if (!grouped.identity) pv.records = grouped.records + begin;
    std::vector<float> lse_max(end - begin, nan), lse_log(end - begin, nan);
    std::vector<float> kept((end - begin) * score_row, nan);
    const ScoresView scores{score_row > 0 ? kept.data() : nullptr, score_row};
    if (bounds.tensor_cores) {
      Launch(static_cast<int>(plan.lse_items.size()), 4 * stats_tc_detail::TcLseSharedFloats(dim), TcLseKernel,
             view, pv, plan.lse_items.data(), lse_max.data(), lse_log.data());
    } else if (bounds.fp64_mma && scores.data != nullptr) {
      Launch(static_cast<int>(plan.lse_items.size()), 4 * stats_dmma_detail::LseSharedFloats(dim), LseDmmaKernel,
             view, pv, plan.lse_items.data(), lse_max.data(), lse_log.data(), scores);
    } else if (tile == 64) {
      Launch(static_cast<int>(plan.lse_items.size()), 4 * stats_detail::LseSharedFloats(dim, 64), LseKernel<64>,
             view, pv, plan.lse_items.data(), lse_max.data(), lse_log.data(), scores);
    } else {
      Launch(static_cast<int>(plan.lse_items.size()), 4 * stats_detail::LseSharedFloats(dim, 32), LseKernel<32>,
             view, pv, plan.lse_items.data(), lse_max.data(), lse_log.data(), scores);
    }
    for (const StatsBatch& batch : plan.batches) {
      std::vector<double> partials(batch.items.size() * block_doubles, std::nan(""));
      if (bounds.tensor_cores) {
        const size_t bytes = 4 * stats_tc_detail::TcStatsSharedFloats(dim);
        auto launch = [&](auto kernel) {
          Launch(static_cast<int>(batch.items.size()), bytes, kernel, view, pv, batch.items.data(), lse_max.data(),
                 lse_log.data(), partials.data());
        };
        const int steps = TcCols(dim) / 8;
        if (steps <= 4) {
          launch(TcStatsKernel<4>);
        } else if (steps <= 8) {
          launch(TcStatsKernel<8>);
        } else {
          launch(TcStatsKernel<11>);
        }
      } else {
        DispatchEmulated(dim, tile, [&](auto t, auto c) {
        constexpr int kTile = decltype(t)::value, kColumns = decltype(c)::value;
        const size_t bytes = 4 * stats_detail::StatsSharedFloats(dim, kTile, kColumns);
        const size_t kept_bytes = 4 * stats_detail::KeptStatsSharedFloats(kTile, kColumns);
        const int items = static_cast<int>(batch.items.size());
        if (bounds.flush_tiles == 0) {
          Launch(items, bytes, StatsKernel<kTile, kColumns, 0>, view, pv, batch.items.data(), lse_max.data(),
                 lse_log.data(), partials.data(), scores);
          if (scores.data != nullptr && bounds.fp64_mma) {
            ASSERT_TRUE(Fp64MmaShapeSupported(dim, kTile));
            LaunchEmulatedDmma(dim, items, view, pv, batch.items.data(), lse_max.data(), lse_log.data(),
                               partials.data(), scores);
          } else if (scores.data != nullptr) {
            Launch(items, kept_bytes, KeptStatsKernel<kTile, kColumns, 0>, view, pv, batch.items.data(),
                   static_cast<const float*>(lse_max.data()), static_cast<const float*>(lse_log.data()),
                   partials.data(), scores);
          }
        } else {
          ASSERT_EQ(bounds.flush_tiles, kStatsFlushTilesAlt);
          Launch(items, bytes, StatsKernel<kTile, kColumns, kStatsFlushTilesAlt>, view, pv, batch.items.data(),
                 lse_max.data(), lse_log.data(), partials.data(), scores);
          if (scores.data != nullptr) {
            Launch(items, kept_bytes, KeptStatsKernel<kTile, kColumns, kStatsFlushTilesAlt>, view, pv,
                   batch.items.data(), static_cast<const float*>(lse_max.data()),
                   static_cast<const float*>(lse_log.data()), partials.data(), scores);
          }
        }
        });
      }
      std::vector<double> out(batch.rows * row_doubles, std::nan(""));
      const int chunks = (tile * row_doubles + kStatsThreads - 1) / kStatsThreads;
      for (int y = 0; y < chunks; ++y) {  // the reduction's grid.y, one launch per value
        Launch(static_cast<int>(batch.outputs.size()), 0,
               [y](const double* p, const ItemRange* r, int t, int rd, double* o) {
                 blockIdx.y = y;
                 ReducePartialsKernel(p, r, t, rd, o);
               },
               static_cast<const double*>(partials.data()), static_cast<const ItemRange*>(batch.ranges.data()), tile,
               row_doubles, out.data());
      }
      for (size_t o = 0; o < batch.outputs.size(); ++o) {
        const int set = batch.outputs[o].target / num_states, state = batch.outputs[o].target % num_states;
        const int64_t first = int64_t{batch.outputs[o].tile_in_state} * tile;
        const int64_t valid = std::min<int64_t>(tile, model.num_gaussians_in_state(state) - first);
        EXPECT_EQ(valid, batch.ranges[o].rows);
        for (int64_t g = 0; g < valid; ++g) {
          const double* row = &out[(batch.ranges[o].out_row + g) * row_doubles];
          AddStatsRow(row[0], row + 1, row + 1 + dim,
                        set * model.num_gaussians() + model.state_offsets()[state] + first + g, &stats);
        }
      }
    }
    std::vector<double> sums(kLseSumBlocks, std::nan(""));
    Launch(kLseSumBlocks, 0, WeightedLseSumKernel, static_cast<const float*>(lse_max.data()),
           static_cast<const float*>(lse_log.data()), pv.records, end - begin, sums.data());
    for (double s : sums) stats.total_loglike += s;
  }
  stats.total_weight += grouped.total_weight;
  return stats;
}

double NormwiseError(const std::vector<double>& got, const std::vector<double>& want) {
  double scale = 0.0, worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    worst = std::isfinite(got[i]) ? std::max(worst, std::fabs(got[i] - want[i])) : INFINITY;
  }
  return scale > 0.0 ? worst / scale : worst;
}

void Check(const std::string& name, const DiagGmmModel& model, const FloatMatrix& frames,
           const std::vector<StatsPair>& pairs, int num_sets, int tile, Bounds bounds = {}) {
  const GmmStats got = EmulatedStats(model, frames, pairs, num_sets, tile, bounds);
  auto want = ParallelReferenceStats(model, frames, pairs, num_sets);
  ASSERT_TRUE(want.ok()) << want.status();
  const double occ = NormwiseError(got.occupancy, want->occupancy);
  const double mean = NormwiseError(got.mean_acc, want->mean_acc);
  const double var = NormwiseError(got.var_acc, want->var_acc);
  const double loglike = std::fabs(got.total_loglike - want->total_loglike) / std::max(1.0, std::fabs(want->total_loglike));
  std::printf("emulated_error %-28s tile %d flush %d tc %d kept %d occ %.3g mean %.3g var %.3g loglike %.3g\n",
              name.c_str(), tile, bounds.flush_tiles, bounds.tensor_cores ? 1 : 0, bounds.keep_scores ? 1 : 0, occ,
              mean, var, loglike);
  EXPECT_LE(occ, 2e-5) << name;
  EXPECT_LE(mean, 2e-5) << name;
  EXPECT_LE(var, 2e-5) << name;
  EXPECT_LE(loglike, 1e-5) << name;
  EXPECT_DOUBLE_EQ(got.total_weight, want->total_weight);
}

DiagGmmModel Model(int states, int min_gaussians, int max_gaussians, int dim, uint64_t seed) {
  auto model = GenerateSyntheticModel(
      {.num_states = states, .min_gaussians = min_gaussians, .max_gaussians = max_gaussians, .dim = dim, .seed = seed});
  EXPECT_TRUE(model.ok());
  return std::move(*model);
}

// One pair for each of `frames` frames but every `skip`-th, to a random one
// of the first `states_used` states of set 0 or (one in three) set 1 of a
// model of `num_states`; weight 0 one time in four, else 0.25 to 1.24.
std::vector<StatsPair> WeightedPairsOfTwoSets(int frames, int skip, int states_used, int num_states, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < frames; ++t) {
    if (t % skip == 0) continue;
    const int state = static_cast<int>(random() % states_used);
    const float weight = random() % 4 == 0 ? 0.0f : 0.25f + static_cast<float>(random() % 100) / 100.0f;
    pairs.push_back({t, (random() % 3 == 0 ? num_states : 0) + state, weight});
  }
  return pairs;
}

TEST(StatsEmulationTest, GlobalGmmSingleAndMultiTile) {
  // Dimensions of the instances DispatchEmulated builds: tile 64 with 1, 2,
  // 5, 6 columns; tile 32 with 1, 3, 4, 8.
  for (int dim : {1, 13, 39, 48, 49, 128}) {
    for (int tile : {64, 32}) {
      if (tile == 64 && dim > kMaxTile64Dim) continue;
      for (int gaussians : {3, 70}) {
        for (int64_t frames : {int64_t{130}}) {
          const DiagGmmModel model = Model(1, gaussians, gaussians, dim, dim + gaussians);
          Check("global_D" + std::to_string(dim) + "_M" + std::to_string(gaussians) + "_T" + std::to_string(frames),
                model, DrawModelFrames(model, frames, 3), {}, 1, tile);
        }
      }
    }
  }
}

TEST(StatsEmulationTest, AlignmentPosteriorsSetsAndSmallBounds) {
  const DiagGmmModel model = Model(6, 1, 140, 13, 9);
  const FloatMatrix frames = DrawModelFrames(model, 400, 4);
  std::mt19937 random(1);
  std::vector<StatsPair> pairs;
  for (int t = 0; t < 400; ++t) {
    if (t % 9 == 0) continue;  // frames in no pair
    const int count = 1 + static_cast<int>(random() % 2);
    for (int k = 0; k < count; ++k) {
      const int state = static_cast<int>(random() % 5);  // state 5 gets nothing
      const int set = static_cast<int>(random() % 3) == 0 ? 1 : 0;
      const float weight = random() % 4 == 0 ? 0.0f : 0.25f + static_cast<float>(random() % 100) / 100.0f;
      pairs.push_back({t, set * 6 + state, weight});
    }
  }
  std::shuffle(pairs.begin(), pairs.end(), random);
  for (int tile : {64, 32}) {
    Check("pairs_D13_S6_K2", model, frames, pairs, 2, tile);
    Check("pairs_small_bounds", model, frames, pairs, 2, tile, {.chunk = 100, .target_items = 3, .max_items = 4});
  }
  Check("pairs_small_bounds", model, frames, pairs, 2, 64,
        {.chunk = 100, .target_items = 3, .max_items = 4, .flush_tiles = kStatsFlushTilesAlt});
}

// Items of many tiles: the float32 sums flushed several times per item
// (and a last partial flush), against the float64 register variant.
TEST(StatsEmulationTest, FlushVariantOverLongItems) {
  for (int dim : {13, 39}) {
    const DiagGmmModel model = Model(1, 70, 70, dim, 12);
    const FloatMatrix frames = DrawModelFrames(model, 1500, 5);  // 24 pair tiles: 3 flushes of 8, or one of 8 and
                                                                 // one of the rest per item below
    for (int flush : {0, kStatsFlushTilesAlt}) {
      Check("long_items_D" + std::to_string(dim), model, frames, {}, 1, 64, {.target_items = 1, .flush_tiles = flush});
      Check("long_items_D" + std::to_string(dim), model, frames, {}, 1, 32, {.target_items = 2, .flush_tiles = flush});
    }
  }
}

// Kept scores: the statistics kernel reads what the LSE kernel wrote (NaN
// wherever it did not), for multi-tile states of a global GMM and of an
// alignment beside single-tile ones, over chunks and items of many tiles.
// The same bits as scoring again, since both kernels score alike.
TEST(StatsEmulationTest, KeptScoresGiveTheSameStatistics) {
  // (Each emulated CTA is 256 threads: the shapes are few and small.)
  const DiagGmmModel global = Model(1, 100, 100, 13, 21);
  const FloatMatrix frames = DrawModelFrames(global, 200, 6);
  for (const auto& [tile, flush] : {std::pair{64, 0}, std::pair{64, kStatsFlushTilesAlt}, std::pair{32, 0}}) {
    const Bounds rescored{.chunk = 130, .target_items = 5, .flush_tiles = flush};
    Bounds kept = rescored;
    kept.keep_scores = true;
    const GmmStats a = EmulatedStats(global, frames, {}, 1, tile, rescored);
    const GmmStats b = EmulatedStats(global, frames, {}, 1, tile, kept);
    EXPECT_EQ(a.occupancy, b.occupancy) << tile << " " << flush;
    EXPECT_EQ(a.mean_acc, b.mean_acc) << tile << " " << flush;
    EXPECT_EQ(a.var_acc, b.var_acc) << tile << " " << flush;
    EXPECT_EQ(a.total_loglike, b.total_loglike) << tile << " " << flush;
  }
  const DiagGmmModel model = Model(6, 1, 140, 13, 9);
  const FloatMatrix hmm_frames = DrawModelFrames(model, 200, 4);
  const std::vector<StatsPair> pairs = WeightedPairsOfTwoSets(200, 5, 6, 6, 3);
  Check("kept_pairs_D13_S6_K2", model, hmm_frames, pairs, 2, 64,
        {.chunk = 100, .target_items = 3, .max_items = 4, .keep_scores = true});
}

// The float64 tensor-core kernel of kept-score items: x tiles of 1, 2 and 5
// (D = 1, 13, 39; D = 39 leaves a zero column in the last), states of 2 and
// 3 tiles (the last mostly padding), pair tiles cut short at an item's and a
// chunk's end, items of many pair tiles (both buffers many times over),
// alignments with zero weights, two sets and single-tile states beside.
TEST(StatsEmulationTest, Fp64TensorCoreKernel) {
  // (Each emulated MMA is two warp barriers: the shapes are few and small.)
  for (const auto& [dim, gaussians] : {std::pair{1, 130}, std::pair{13, 70}, std::pair{39, 70}}) {
    const DiagGmmModel model = Model(1, gaussians, gaussians, dim, dim + gaussians);
    Check("dmma_global_D" + std::to_string(dim) + "_M" + std::to_string(gaussians), model,
          DrawModelFrames(model, 150, 3), {}, 1, 64, {.chunk = 130, .keep_scores = true, .fp64_mma = true});
  }
  const DiagGmmModel narrow = Model(1, 100, 100, 5, 12);  // 9 pair tiles per item
  Check("dmma_long_items_D5", narrow, DrawModelFrames(narrow, 550, 5), {}, 1, 64,
        {.target_items = 1, .keep_scores = true, .fp64_mma = true});
  const DiagGmmModel model = Model(6, 1, 140, 13, 9);
  const FloatMatrix frames = DrawModelFrames(model, 200, 4);
  const std::vector<StatsPair> pairs = WeightedPairsOfTwoSets(200, 5, 6, 6, 3);
  Check("dmma_pairs_D13_S6_K2", model, frames, pairs, 2, 64,
        {.chunk = 100, .target_items = 3, .max_items = 4, .keep_scores = true, .fp64_mma = true});
}

// Posteriors far below 1 but not zero in float32 (faint twins of every 5th
// Gaussian, e^-60 of their siblings' posteriors) are counted: the float64
// kernel's skip of dead pairs (stats_dmma_kernel.cuh, MultiplyLivePairs)
// drops only exact zeros. Counting posteriors below e^-20 as dead fails
// this; the normwise checks would not see it.
TEST(StatsEmulationTest, FaintPosteriorsAreCounted) {
  const int stride = 5;
  const DiagGmmModel drawn = Model(1, 128, 128, 13, 21);
  const DiagGmmModel model = WithFaintGaussians(drawn, stride, -60.0);
  const FloatMatrix frames = DrawModelFrames(drawn, 300, 8);
  auto want = ParallelReferenceStats(model, frames, {}, 1);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_GT(want->occupancy[0], 1e-30);  // faint, not vanished
  EXPECT_LT(want->occupancy[0], 1e-12);
  for (bool fp64_mma : {false, true}) {
    const GmmStats got = EmulatedStats(model, frames, {}, 1, 64,
                                       {.chunk = 300, .keep_scores = true, .fp64_mma = fp64_mma});
    const double error = FaintGaussianError(got, *want, stride);
    std::printf("emulated_error faint_D13_M128 fp64_mma %d faint rows %.3g\n", fp64_mma ? 1 : 0, error);
    EXPECT_LE(error, 1e-4) << fp64_mma;
  }
}

// The tensor-core kernels: every instance (4, 8, 11 k-steps), single- and
// multi-tile states (the fused log-sum-exp and the LSE kernel), alignments
// with weights and sets, and items of many pair tiles (several flushes).
TEST(StatsEmulationTest, TensorCoreKernels) {
  // (Each emulated MMA is two warp barriers: the shapes are few and small.)
  for (const auto& [dim, gaussians] : {std::pair{1, 70}, std::pair{13, 3}, std::pair{31, 70}, std::pair{43, 70}}) {
    const DiagGmmModel model = Model(1, gaussians, gaussians, dim, dim + gaussians);
    Check("tc_global_D" + std::to_string(dim) + "_M" + std::to_string(gaussians), model,
          DrawModelFrames(model, 130, 3), {}, 1, 64, {.tensor_cores = true});
  }
  const DiagGmmModel model = Model(6, 1, 140, 13, 9);
  const FloatMatrix frames = DrawModelFrames(model, 300, 4);
  const std::vector<StatsPair> pairs = WeightedPairsOfTwoSets(300, 7, 5, 6, 2);  // state 5 gets nothing
  Check("tc_pairs_D13_S6_K2", model, frames, pairs, 2, 64, {.chunk = 100, .target_items = 3, .tensor_cores = true});
  const DiagGmmModel narrow = Model(1, 40, 40, 5, 12);  // 18 pair tiles per item: two flushes and the rest
  Check("tc_long_items_D5", narrow, DrawModelFrames(narrow, 1100, 5), {}, 1, 64,
        {.target_items = 1, .tensor_cores = true});
}

}  // namespace
}  // namespace train_cuda
}  // namespace gmmscore
