// Timing of the CPU backend on the paper's configurations: 5000 states of 16
// or 256 Gaussians, D = 36, batches of 8, 16 and 256 frames (frame totals on,
// as the server asks for them).
//
//   cpu_backend_bench --benchmark_min_time=0.5
//
// Counters: frames/s, and GFLOP/s counting (4D + 2) flops per Gaussian per
// frame (the 2D + 1 multiply-adds of K + u.y + v.y^2; the log-sum-exp is not
// counted).
#include <cstdio>
#include <map>
#include <memory>

#include "benchmark/benchmark.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

constexpr int kStates = 5000;
constexpr int kDim = 36;

// Models take seconds to generate; build each once.
std::shared_ptr<const DiagGmmModel> PaperModel(int gaussians_per_state) {
  static auto* models = new std::map<int, std::shared_ptr<const DiagGmmModel>>;
  auto& model = (*models)[gaussians_per_state];
  if (model == nullptr) {
    auto generated = GenerateSyntheticModel({.num_states = kStates,
                                             .min_gaussians = gaussians_per_state,
                                             .max_gaussians = gaussians_per_state,
                                             .dim = kDim,
                                             .seed = 1});
    if (!generated.ok()) {
      std::fprintf(stderr, "%s\n", generated.status().ToString().c_str());
      std::abort();
    }
    model = std::make_shared<const DiagGmmModel>(*std::move(generated));
  }
  return model;
}

void BM_CpuScore(benchmark::State& state) {
  const int gaussians_per_state = static_cast<int>(state.range(0));
  const int64_t frames = state.range(1);
  const auto model = PaperModel(gaussians_per_state);
  static std::unique_ptr<ScoringBackend> backend = CreateCpuBackend();
  auto prepared = backend->Prepare(model);
  if (!prepared.ok()) {
    state.SkipWithError(prepared.status().ToString().c_str());
    return;
  }
  const FloatMatrix features = GenerateSyntheticFeatures(*model, frames, 7);
  ScoreResult result;
  for (auto _ : state) {
    const absl::Status status = backend->Score(**prepared, features.view(), {}, &result);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(result.loglikes.data());
  }
  const double flops = static_cast<double>(frames) * model->num_gaussians() * (4 * kDim + 2);
  state.counters["frames/s"] = benchmark::Counter(static_cast<double>(frames),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_CpuScore)
    ->ArgNames({"G", "T"})
    ->ArgsProduct({{16, 256}, {8, 16, 256}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    // CPU = all threads: on a shared machine, GFLOP/s x time / CPU shows
    // what the cores that were actually had delivered.
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace gmmscore

BENCHMARK_MAIN();
