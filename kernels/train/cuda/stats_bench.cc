// train_stats_bench: throughput of the CUDA statistics pass (one
// StatsBackend::Accumulate over resident frames) against the float32 roof.
//
//   train_stats_bench [--frames=2000000] [--gaussians=64,...,4096] [--dim=39] [--csv=out.csv]
//
// Rows (CSV on stdout, and to --csv):
//   global      a UBM of M Gaussians over --frames frames drawn from it;
//   alignment   an HMM-like model (--states states of 16..32 Gaussians), one
//               pair per frame;
//   estep_*     Machlica et al. 2011's configuration, 3,125,506 frames of
//               D = 40, M = 2048: upload (LoadFrames, with the value check),
//               first Accumulate (scratch allocation included), then warm;
//               *_fp32_Ngpus: on every GPU of the host, frames sharded;
//   *_flushN    the same rows with the statistics kernel's other
//               accumulation variant (stats_policy.h, --flush_rows);
//   *_ffma      the same rows with the kept-score statistics GEMM on float32
//               FFMAs (where the unsuffixed rows run it on sm_90's float64
//               tensor cores, stats_dmma_kernel.cuh; --ffma_rows);
//   *_tf32x3    the same rows on the tensor-core kernels (stats_tc_kernels.cuh)
//               where the dimension allows them; the unsuffixed rows are
//               the float32 kernels.
// Comment lines (#) give per-kernel times of one global pass for both tile
// widths and variants (--kernel_gaussians) and the host's share of the
// alignment row.
// The roof: the paper's 8D + 23 flops per frame and Gaussian (likelihood,
// log-add, posterior, first and second moments) over the device's float32
// peak, SMs x clock x 128 FMA lanes x 2. The kernels do more than that count
// (the log-sum-exp pass scores each Gaussian once more), so 100% is not
// reachable: see the report for the kernels' own count.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cuda/cuda_stats_backend.h"
#include "kernels/train/em_trainer.h"
#include "kernels/train/sharded_stats_backend.h"
#include "kernels/train/cuda/stats_kernels.h"
#include "kernels/train/cuda/stats_plan.h"
#include "kernels/train/cuda/stats_test_data.h"

ABSL_FLAG(int64_t, frames, 2000000, "resident frames of the global and alignment rows");
ABSL_FLAG(std::string, gaussians, "64,128,256,512,1024,2048,4096", "Gaussian counts of the global rows");
ABSL_FLAG(int, dim, 39, "feature dimension of the global and alignment rows");
ABSL_FLAG(int, states, 2000, "states of the alignment row (0: skip)");
ABSL_FLAG(double, min_seconds, 1.0, "time each row for at least this long");
ABSL_FLAG(bool, estep, true, "Machlica's E-step row (3,125,506 x 40 x 2048)");
ABSL_FLAG(std::string, csv, "", "also write the CSV here");
ABSL_FLAG(std::string, kernel_gaussians, "64,2048", "Gaussian counts of the per-kernel timings (empty: skip)");
ABSL_FLAG(bool, flush_rows, true, "also time the global and alignment rows with the other accumulation variant");
ABSL_FLAG(bool, rescore_rows, true, "also time the global rows and E-step with scores recomputed, not kept");
ABSL_FLAG(bool, ffma_rows, true, "also time the global rows and E-step with the float32 kept-score GEMM");
ABSL_FLAG(int64_t, max_score_mb, -1, "kept-score budget of the float32 rows in MiB (-1: the library default)");

namespace gmmscore {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Device {
  std::string name;
  int sms = 0;
  double clock_ghz = 0.0;
  double peak_flops = 0.0;  // float32
};

Device ReadDevice() {
  Device device;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) device.name = prop.name;
  int khz = 0;
  cudaDeviceGetAttribute(&device.sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  device.clock_ghz = khz * 1e-6;
  device.peak_flops = device.sms * khz * 1e3 * 128 * 2;
  return device;
}

struct Row {
  std::string kind;
  int dim = 0;
  int64_t gaussians = 0;  // per frame evaluated (mean over pairs for alignments)
  int states = 1;
  int64_t frames = 0;
  double seconds = 0.0;
};

std::string Format(const Row& row, const Device& device) {
  const double per_frame = static_cast<double>(row.gaussians) * (8.0 * row.dim + 23.0);
  const double fps = row.frames / row.seconds;
  const double roof = device.peak_flops / per_frame;
  char line[256];
  std::snprintf(line, sizeof(line), "%s,%d,%lld,%d,%lld,%.6f,%.4g,%.1f,%.4g,%.3f", row.kind.c_str(), row.dim,
                static_cast<long long>(row.gaussians), row.states, static_cast<long long>(row.frames), row.seconds,
                fps, fps * per_frame * 1e-9, roof, fps / roof);
  return line;
}

// Mean seconds of Accumulate over repetitions filling --min_seconds (after
// one warm-up call).
double TimeAccumulate(StatsBackend& backend, const FrameBlock& block, const std::vector<StatsPair>& pairs,
                      const DiagGmmModel& model, int num_sets) {
  GmmStats stats = GmmStats::ForModel(model, num_sets);
  absl::Status status = backend.Accumulate(block, pairs, &stats);
  if (!status.ok()) {
    std::fprintf(stderr, "Accumulate: %s\n", status.ToString().c_str());
    std::exit(1);
  }
  int reps = 0;
  const Clock::time_point start = Clock::now();
  do {
    status = backend.Accumulate(block, pairs, &stats);
    if (!status.ok()) std::exit(1);
    ++reps;
  } while (Seconds(start) < absl::GetFlag(FLAGS_min_seconds) || reps < 2);
  return Seconds(start) / reps;
}

DiagGmmModel MakeModel(int states, int min_gaussians, int max_gaussians, int dim, uint64_t seed) {
  auto model = GenerateSyntheticModel(
      {.num_states = states, .min_gaussians = min_gaussians, .max_gaussians = max_gaussians, .dim = dim, .seed = seed});
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*model);
}

// Per-kernel times of one global pass (CUDA events around each launch),
// for tiles of 64 and 32 Gaussians and work-item targets of 2, 4 and 8
// items per resident CTA: where the time goes, and whether the tile choice
// and kItemsPerResidentCta are good ones.
// tc: the tensor-core kernels instead (tile 64; flush is ignored).
// kept: the LSE kernel keeps every score for the statistics kernel (all the
// frames' scores at once: frames x gaussians floats of device memory).
// kept_gemm: the kept-score statistics GEMM (kFfma or kFp64Mma).
void TimeKernels(const Device& device, int dim, int gaussians, int64_t frames, int tile, int flush, bool tc,
                 bool kept, train_cuda::KeptStatsGemm kept_gemm = train_cuda::KeptStatsGemm::kFfma,
                 int dmma_unroll = train_cuda::kFp64MmaStepUnroll) {
  using namespace train_cuda;
  if (!StatsShapeSupported(dim, tile) || (tc && !TcStatsShapeSupported(dim, tile))) return;
  const bool dmma = kept && kept_gemm == KeptStatsGemm::kFp64Mma;
  if (dmma && !Fp64MmaShapeSupported(dim, tile)) return;
  const DiagGmmModel model = MakeModel(1, gaussians, gaussians, dim, 40 + gaussians);
  const FloatMatrix data = DrawModelFrames(model, frames, 3);
  const StatsTiles tiles = BuildStatsTiles(model, tile);
  const std::vector<float> center(model.center().begin(), model.center().end());
  auto d_tiles = DeviceBuffer<float>::FromHost(tiles.params.data(), tiles.params.size());
  auto d_single = DeviceBuffer<int32_t>::FromHost(tiles.single_tile.data(), tiles.single_tile.size());
  auto d_in_state = DeviceBuffer<int32_t>::FromHost(tiles.tile_in_state.data(), tiles.tile_in_state.size());
  const int64_t score_row = kept ? KeptScoreRowFloats(tiles) : 0;
  if (kept && score_row == 0) return;
  auto d_scores = DeviceBuffer<float>::Allocate(std::max<int64_t>(1, frames * score_row));
  auto d_center = DeviceBuffer<float>::FromHost(center.data(), center.size());
  auto d_frames = DeviceBuffer<float>::FromHost(data.data(), static_cast<size_t>(frames * dim));
  auto d_max = DeviceBuffer<float>::Allocate(frames);
  auto d_log = DeviceBuffer<float>::Allocate(frames);
  auto ctas = tc ? TcStatsCtasPerSm(dim) : StatsCtasPerSm(dim, tile, flush);
  const std::vector<float> tc_tiles = tc ? BuildTcTiles(tiles) : std::vector<float>(1);
  auto d_tc_tiles = DeviceBuffer<float>::FromHost(tc_tiles.data(), tc_tiles.size());
  if (!d_tiles.ok() || !d_single.ok() || !d_center.ok() || !d_frames.ok() || !d_max.ok() || !d_log.ok() ||
      !ctas.ok() || !d_tc_tiles.ok() || !d_in_state.ok() || !d_scores.ok()) {
    std::fprintf(stderr, "kernel timing setup failed\n");
    return;
  }
  const StatsModelView view{d_tiles->data(), d_single->data(), d_center->data(), dim, tile,
                            tc ? d_tc_tiles->data() : nullptr, d_in_state->data(), tiles.num_tiles() == 1};
  const ScoresView scores{kept ? d_scores->data() : nullptr, score_row};
  PairsView pairs;
  pairs.frames = d_frames->data();
  const GroupedPairs grouped = GroupStatsPairs({}, frames, 1, {});
  const int row_doubles = StatsRowDoubles(dim);
  const int64_t block_doubles = int64_t{tile} * row_doubles;
  cudaEvent_t marks[4];
  for (cudaEvent_t& mark : marks) cudaEventCreate(&mark);
  for (int per_cta : {2, 4, 8}) {
    const int64_t target = int64_t{per_cta} * device.sms * *ctas;
    const ChunkPlan plan = PlanChunk(grouped, 0, frames, tiles, model.state_offsets(), target, 1 << 30);
    if (plan.batches.size() != 1) return;
    const StatsBatch& batch = plan.batches[0];
    auto d_lse_items = DeviceBuffer<LseItem>::FromHost(plan.lse_items.data(), plan.lse_items.size());
    auto d_items = DeviceBuffer<StatsItem>::FromHost(batch.items.data(), batch.items.size());
    auto d_ranges = DeviceBuffer<ItemRange>::FromHost(batch.ranges.data(), batch.ranges.size());
    auto d_partials = DeviceBuffer<double>::Allocate(batch.items.size() * block_doubles);
    auto d_out = DeviceBuffer<double>::Allocate(batch.rows * row_doubles);
    if (!d_lse_items.ok() || !d_items.ok() || !d_ranges.ok() || !d_partials.ok() || !d_out.ok()) return;
    double ms[3] = {0, 0, 0};
    constexpr int kReps = 3;
    for (int rep = 0; rep <= kReps; ++rep) {  // rep 0 warms up
      cudaEventRecord(marks[0]);
      const int lse_items = static_cast<int>(plan.lse_items.size());
      absl::Status status =
          tc ? LaunchTcLse(view, pairs, d_lse_items->data(), lse_items, d_max->data(), d_log->data(), nullptr)
             : LaunchLse(view, pairs, d_lse_items->data(), lse_items, d_max->data(), d_log->data(), nullptr, scores,
                         dmma ? KeptStatsGemm::kFp64Mma : KeptStatsGemm::kFfma);
      cudaEventRecord(marks[1]);
      if (status.ok()) {
        const int items = static_cast<int>(batch.items.size());
        status = tc     ? LaunchTcStats(view, pairs, d_items->data(), items, d_max->data(), d_log->data(),
                                        d_partials->data(), nullptr)
                 : dmma ? LaunchKeptStatsDmma(view, pairs, d_items->data(), items, d_max->data(), d_log->data(),
                                              d_partials->data(), nullptr, scores, dmma_unroll)
                        : LaunchStats(view, pairs, d_items->data(), items, d_max->data(), d_log->data(),
                                      d_partials->data(), nullptr, flush, scores);
      }
      cudaEventRecord(marks[2]);
      if (status.ok()) {
        status = LaunchReducePartials(d_partials->data(), d_ranges->data(), static_cast<int>(batch.outputs.size()),
                                      tile, row_doubles, d_out->data(), nullptr);
      }
      cudaEventRecord(marks[3]);
      if (!status.ok() || cudaEventSynchronize(marks[3]) != cudaSuccess) {
        std::fprintf(stderr, "kernel timing failed: %s\n", status.ToString().c_str());
        return;
      }
      for (int k = 0; rep > 0 && k < 3; ++k) {
        float part = 0.0f;
        cudaEventElapsedTime(&part, marks[k], marks[k + 1]);
        ms[k] += part / kReps;
      }
    }
    const double flops_per = static_cast<double>(frames) * gaussians;
    if (tc) {
      // TF32 MMA work: 3 MMAs per product, 2 x TcCols multiply-adds per
      // pair and Gaussian in the LSE kernel, twice that in the statistics one.
      const double mma = flops_per * 2.0 * TcCols(dim) * 3;
      std::printf("# kernels D=%d M=%d T=%lld tile=64 tf32x3 (%d CTAs/SM) items/CTA=%d (%zu items, %zu lse CTAs): "
                  "lse %.3f ms, stats %.3f ms, reduce %.3f ms; TF32 MMA rate lse %.0f, stats %.0f TFLOP/s\n",
                  dim, gaussians, static_cast<long long>(frames), *ctas, per_cta, batch.items.size(),
                  plan.lse_items.size(), ms[0], ms[1], ms[2], ms[0] > 0 ? mma / (ms[0] * 1e-3) * 1e-12 : 0.0,
                  2 * mma / (ms[1] * 1e-3) * 1e-12);
      std::fflush(stdout);
      continue;
    }
    // The statistics kernel's own FMAs: the tile GEMM's 2D, and 2D more
    // for scoring unless the scores are kept.
    const int stats_fmas = kept ? 2 * dim : 4 * dim;
    std::printf("# kernels D=%d M=%d T=%lld tile=%d flush=%d kept=%d%s%s (%d CTAs/SM) items/CTA=%d (%zu items, %zu lse "
                "CTAs): lse %.3f ms, stats %.3f ms, reduce %.3f ms; lse %.1f%% and stats %.1f%% of fp32 peak by "
                "their own FMA count\n",
                dim, gaussians, static_cast<long long>(frames), tile, flush, kept ? 1 : 0, dmma ? " gemm=fp64mma" : "",
                dmma ? (" unroll=" + std::to_string(dmma_unroll)).c_str() : "",
                *ctas, per_cta,
                batch.items.size(), plan.lse_items.size(), ms[0], ms[1], ms[2],
                ms[0] > 0 ? 100.0 * flops_per * 4 * dim / (ms[0] * 1e-3) / device.peak_flops : 0.0,
                100.0 * flops_per * 2 * stats_fmas / (ms[1] * 1e-3) / device.peak_flops);
    std::fflush(stdout);
  }
  for (cudaEvent_t& mark : marks) cudaEventDestroy(mark);
}

int Main() {
  CudaStatsOptions fp32_options, alt_options, tc_options, rescore_options, ffma_options;
  fp32_options.kernel = alt_options.kernel = rescore_options.kernel = ffma_options.kernel =
      train_cuda::StatsKernelChoice::kFp32;
  ffma_options.kept_gemm = train_cuda::KeptStatsGemm::kFfma;
  rescore_options.max_score_bytes = 0;
  if (const int64_t mb = absl::GetFlag(FLAGS_max_score_mb); mb >= 0) {
    fp32_options.max_score_bytes = ffma_options.max_score_bytes = mb << 20;
  }
  alt_options.flush_tiles = train_cuda::kStatsOtherFlushTiles;
  tc_options.kernel = train_cuda::StatsKernelChoice::kTf32x3;
  auto created = CreateCudaStatsBackend(0, fp32_options);
  auto created_alt = CreateCudaStatsBackend(0, alt_options);
  auto created_tc = CreateCudaStatsBackend(0, tc_options);
  auto created_rescore = CreateCudaStatsBackend(0, rescore_options);
  auto created_ffma = CreateCudaStatsBackend(0, ffma_options);
  if (!created.ok() || !created_alt.ok() || !created_tc.ok() || !created_rescore.ok() || !created_ffma.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  StatsBackend& backend = **created;
  StatsBackend& alt = **created_alt;
  StatsBackend& tc = **created_tc;
  StatsBackend& rescore = **created_rescore;
  StatsBackend& ffma = **created_ffma;
  const bool ffma_rows = absl::GetFlag(FLAGS_ffma_rows);
  const bool flush_rows = absl::GetFlag(FLAGS_flush_rows);
  const bool rescore_rows = absl::GetFlag(FLAGS_rescore_rows);
  const bool tc_rows = train_cuda::TcStatsShapeSupported(absl::GetFlag(FLAGS_dim), train_cuda::kTcTile);

  const std::string alt_suffix = "_flush" + std::to_string(alt_options.flush_tiles);
  const Device device = ReadDevice();
  std::printf("# device %s, %d SMs at %.3f GHz: float32 peak %.1f TFLOP/s\n", device.name.c_str(), device.sms,
              device.clock_ghz, device.peak_flops * 1e-12);
  std::vector<std::string> lines = {
      "kind,dim,gaussians,states,frames,seconds,frames_per_s,gflops_8d23,roof_frames_per_s,roof_fraction"};
  auto emit = [&](const Row& row) {
    lines.push_back(Format(row, device));
    std::printf("%s\n", lines.back().c_str());
    std::fflush(stdout);
  };
  std::printf("%s\n", lines[0].c_str());

  const int dim = absl::GetFlag(FLAGS_dim);
  const int64_t frames = absl::GetFlag(FLAGS_frames);
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_gaussians), ',', absl::SkipEmpty())) {
    int gaussians = 0;
    if (!absl::SimpleAtoi(text, &gaussians)) return 1;
    const DiagGmmModel model = MakeModel(1, gaussians, gaussians, dim, 40 + gaussians);
    const FloatMatrix data = DrawModelFrames(model, frames, 3);
    // One row on `on`, its frames freed before the next row's are loaded.
    auto row = [&](StatsBackend& on, const std::string& kind) {
      if (!on.SetModel(model).ok()) return false;
      auto block = on.LoadFrames(data.view());
      if (!block.ok()) return false;
      emit({kind, dim, gaussians, 1, frames, TimeAccumulate(on, **block, {}, model, 1)});
      return true;
    };
    if (tc_rows && !row(tc, "global_tf32x3")) return 1;
    if (!row(backend, "global")) return 1;
    if (ffma_rows && !row(ffma, "global_ffma")) return 1;
    if (rescore_rows && !row(rescore, "global_rescore")) return 1;
    if (flush_rows && !row(alt, "global" + alt_suffix)) return 1;
  }

  if (const int states = absl::GetFlag(FLAGS_states); states > 0) {
    const DiagGmmModel model = MakeModel(states, 16, 32, dim, 77);
    const FloatMatrix data = DrawModelFrames(model, frames, 4);
    std::mt19937 random(5);
    std::vector<StatsPair> pairs(frames);
    double evaluated = 0.0;
    for (int64_t t = 0; t < frames; ++t) {
      const int state = static_cast<int>(random() % states);
      pairs[t] = {static_cast<int32_t>(t), state, 1.0f};
      evaluated += model.num_gaussians_in_state(state);
    }
    if (!backend.SetModel(model).ok()) return 1;
    auto block = backend.LoadFrames(data.view());
    if (!block.ok()) return 1;
    emit({"alignment", dim, static_cast<int64_t>(evaluated / frames + 0.5), states, frames,
          TimeAccumulate(backend, **block, pairs, model, 1)});
    if (tc_rows) {
      if (!tc.SetModel(model).ok()) return 1;
      auto tc_block = tc.LoadFrames(data.view());
      if (!tc_block.ok()) return 1;
      emit({"alignment_tf32x3", dim, static_cast<int64_t>(evaluated / frames + 0.5), states, frames,
            TimeAccumulate(tc, **tc_block, pairs, model, 1)});
    }
    if (flush_rows) {
      if (!alt.SetModel(model).ok()) return 1;
      auto alt_block = alt.LoadFrames(data.view());
      if (!alt_block.ok()) return 1;
      emit({"alignment" + alt_suffix, dim, static_cast<int64_t>(evaluated / frames + 0.5), states, frames,
            TimeAccumulate(alt, **alt_block, pairs, model, 1)});
    }
    // The host's share of an alignment pass: the request's checks and the
    // grouping by target (the rest is transfers and kernels).
    const ModelShape shape = ModelShape::Of(model);
    const GmmStats empty = GmmStats::ForModel(model);
    Clock::time_point start = Clock::now();
    if (!ValidateStatsRequest(&shape, frames, dim, pairs, empty).ok()) return 1;
    const double validate = Seconds(start);
    std::vector<train_cuda::PairRecord> storage(pairs.size());
    start = Clock::now();
    const train_cuda::GroupedPairs grouped =
        train_cuda::GroupStatsPairs(pairs, frames, states, absl::MakeSpan(storage));
    std::printf("# alignment host phases: validate %.2f ms, group by target %.2f ms (%zu segments)\n",
                validate * 1e3, Seconds(start) * 1e3, grouped.segments.size());
  }

  // The E-step rows: float32 kernels, tensor-core kernels, and (on a host
  // of several GPUs) the float32 kernels on every GPU, frames sharded.
  int devices = 0;
  cudaGetDeviceCount(&devices);
  for (const std::string suffix : {std::string(""), std::string("_ffma"), std::string("_rescore"), std::string("_tf32x3"),
                                   "_fp32_" + std::to_string(devices) + "gpus"}) {
    if (!absl::GetFlag(FLAGS_estep)) break;
    const bool sharded = suffix.find("gpus") != std::string::npos;
    if (sharded && devices < 2) continue;
    if (suffix == "_rescore" && !rescore_rows) continue;
    if (suffix == "_ffma" && !ffma_rows) continue;
    CudaStatsOptions estep_options;
    if (suffix == "_rescore") estep_options.max_score_bytes = 0;
    if (suffix.empty() || sharded || suffix == "_ffma") estep_options.max_score_bytes = fp32_options.max_score_bytes;
    if (suffix == "_ffma") estep_options.kept_gemm = train_cuda::KeptStatsGemm::kFfma;
    estep_options.kernel =
        suffix == "_tf32x3" ? train_cuda::StatsKernelChoice::kTf32x3 : train_cuda::StatsKernelChoice::kFp32;
    constexpr int64_t kFrames = 3'125'506;
    const DiagGmmModel model = MakeModel(1, 2048, 2048, 40, 2011);
    const FloatMatrix data = DrawModelFrames(model, kFrames, 6);
    std::vector<std::unique_ptr<StatsBackend>> gpus;
    for (int d = 0; d < (sharded ? devices : 1); ++d) {
      auto gpu = CreateCudaStatsBackend(d, estep_options);
      if (!gpu.ok()) return 1;
      gpus.push_back(std::move(*gpu));
    }
    auto fresh = sharded ? CreateShardedStatsBackend(std::move(gpus))
                         : absl::StatusOr<std::unique_ptr<StatsBackend>>(std::move(gpus[0]));
    if (!fresh.ok()) return 1;
    StatsBackend& estep = **fresh;
    if (const absl::Status set = estep.SetModel(model); !set.ok()) {
      std::printf("# estep%s: %s\n", suffix.c_str(), set.ToString().c_str());
      continue;
    }
    Clock::time_point start = Clock::now();
    auto block = estep.LoadFrames(data.view());
    if (!block.ok()) return 1;
    emit({"estep_upload" + suffix, 40, 2048, 1, kFrames, Seconds(start)});
    GmmStats stats = GmmStats::ForModel(model);
    start = Clock::now();
    if (!estep.Accumulate(**block, {}, &stats).ok()) return 1;
    emit({"estep_accumulate_cold" + suffix, 40, 2048, 1, kFrames, Seconds(start)});
    emit({"estep_accumulate" + suffix, 40, 2048, 1, kFrames, TimeAccumulate(estep, **block, {}, model, 1)});
    std::printf("# E-step%s total log-likelihood per frame %.6f (first pass)\n", suffix.c_str(),
                stats.total_loglike / kFrames);
    // Whole EM iterations through the training driver (TrainGmm: statistics,
    // ML update, model rebuild and upload), the data resident after the
    // first; the first iteration's time includes the upload.
    const std::vector<TrainingBlock> blocks = BlocksOfFrames(data.view(), kFrames);
    EmOptions options;
    options.num_gauss = 2048;
    options.iterations = 4;
    auto em = TrainGmm(estep, blocks, NaturalGmm::FromModel(model), options, [&](const EmIteration& it) {
      emit({(it.iteration == 1 ? "em_iteration_first" : "em_iteration") + suffix, 40, 2048, 1, kFrames, it.seconds});
      std::printf("# EM iteration %d: %.4f per frame, %.1f ms (statistics %.1f ms)\n", it.iteration,
                  it.loglike_per_frame, it.seconds * 1e3, it.stats_seconds * 1e3);
    });
    if (!em.ok()) std::fprintf(stderr, "EM: %s\n", em.status().ToString().c_str());
  }

  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_kernel_gaussians), ',', absl::SkipEmpty())) {
    int gaussians = 0;
    if (!absl::SimpleAtoi(text, &gaussians)) continue;
    for (int tile : {64, 32}) {
      for (int flush : {0, train_cuda::kStatsFlushTilesAlt}) {
        for (bool kept : {false, true}) TimeKernels(device, dim, gaussians, frames, tile, flush, false, kept);
      }
    }
    for (int unroll : {train_cuda::kFp64MmaStepUnroll, train_cuda::kFp64MmaStepUnrollAlt}) {
      TimeKernels(device, dim, gaussians, frames, 64, 0, false, true, train_cuda::KeptStatsGemm::kFp64Mma, unroll);
    }
    TimeKernels(device, dim, gaussians, frames, 64, 0, true, false);
  }

  if (const std::string path = absl::GetFlag(FLAGS_csv); !path.empty()) {
    if (FILE* file = std::fopen(path.c_str(), "w")) {
      for (const std::string& line : lines) std::fprintf(file, "%s\n", line.c_str());
      std::fclose(file);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gmmscore::Main();
}
