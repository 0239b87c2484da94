// Where a live adaptation's host time goes, per frame, for one stream of a
// model (default: case (a)'s 5000 x 32 x 39) fed in 10-frame chunks as the
// daemon's workers feed it: state posteriors from the chunk's scores, the
// fMLLR (or MAP) statistics, and each update. One thread.
//
//   online_adaptation_bench [STATES GAUSSIANS DIM FRAMES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/online_adaptation.h"

namespace gmmscore {
namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Run(int states, int gaussians, int dim, int64_t frames) {
  auto model = std::make_shared<const DiagGmmModel>(*GenerateSyntheticModel(
      {.num_states = states, .min_gaussians = gaussians, .max_gaussians = gaussians, .dim = dim, .seed = 1}));
  const FloatMatrix x = GenerateSyntheticFeatures(*model, frames, 2);
  auto cpu = CreateCpuBackend({.num_threads = 0});
  auto prepared = cpu->Prepare(model);
  ScoreResult scores;
  if (!prepared.ok() || !cpu->Score(**prepared, x.view(), {}, &scores).ok()) return 1;
  for (AdaptationMethod method : {AdaptationMethod::kFmllr, AdaptationMethod::kMapMeans}) {
    OnlineAdaptationOptions options;
    options.method = method;
    auto made = std::chrono::steady_clock::now();
    auto adapter = OnlineAdapter::Create(model, options);
    if (!adapter.ok()) return 1;
    const double setup = Seconds(made);
    double posterior_s = 0, gather_s = 0, update_s = 0;
    int64_t pairs = 0, updates = 0;
    for (int64_t t = 0; t + 10 <= frames; t += 10) {
      auto start = std::chrono::steady_clock::now();
      const std::vector<StatsPair> chunk_pairs =
          PairsFromScores(scores.loglikes.view().Rows(t, 10), options.posteriors);
      posterior_s += Seconds(start);
      pairs += chunk_pairs.size();
      start = std::chrono::steady_clock::now();
      if (!(*adapter)->AddChunk(x.view().Rows(t, 10), chunk_pairs).ok()) return 1;
      gather_s += Seconds(start);
      if ((*adapter)->UpdateDue()) {
        start = std::chrono::steady_clock::now();
        if (!(*adapter)->Update().ok()) return 1;
        update_s += Seconds(start);
        ++updates;
      }
    }
    std::printf("%s %dx%dx%d, %lld frames: setup %.1f ms; per frame posteriors %.2f us (%.2f pairs), "
                "statistics %.2f us; %lld updates of %.2f ms (%.2f us per frame)\n",
                AdaptationMethodName(method).c_str(), states, gaussians, dim,
                static_cast<long long>(frames), setup * 1e3, posterior_s / frames * 1e6,
                static_cast<double>(pairs) / frames, gather_s / frames * 1e6,
                static_cast<long long>(updates), updates > 0 ? update_s / updates * 1e3 : 0.0,
                update_s / frames * 1e6);
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) {
  const int states = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int gaussians = argc > 2 ? std::atoi(argv[2]) : 32;
  const int dim = argc > 3 ? std::atoi(argv[3]) : 39;
  const int64_t frames = argc > 4 ? std::atoll(argv[4]) : 3000;
  return gmmscore::Run(states, gaussians, dim, frames);
}
