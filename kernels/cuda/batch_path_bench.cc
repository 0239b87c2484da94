// batch_path_bench: what one backend call of the daemon's shape costs, by the
// kind of answer, next to the likelihood kernel alone (loglik_bench).
//
//   batch_path_bench --config 5000x32x39 --batch_frames 256,1024,2048 --callers 1,4
//
// A daemon batch is many 10-frame windows (one per stream chunk) in one
// ScoreBatch call: features in, the kernel, then per answer kind
//   dense:  every state's float32 score back (20 KB a frame for 5000 states),
//           copied by DMA into the lane's pinned buffer, then into each
//           window's result;
//   half:   float16 encoded on the GPU (ScoreWindow::half_from_best);
//   topk:   the top 100 states selected on the GPU (ScoreWindow::select).
// Each is timed as the daemon's scheduler workers see it: median wall time
// of whole calls, with 1 or several threads calling at once (the daemon runs
// 4 workers over the backend's lanes). Capacity issue 23 (docs/PERFORMANCE.md)
// asks where a lane's time goes past the kernel; this says, per frame.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/model/synthetic_model.h"

ABSL_FLAG(std::string, config, "5000x32x39", "model STATESxGAUSSIANSxDIM");
ABSL_FLAG(std::string, batch_frames, "256,1024,2048", "frames per call, comma-separated");
ABSL_FLAG(int, chunk_frames, 10, "frames per window (a stream chunk)");
ABSL_FLAG(std::string, kinds, "dense,half,topk", "answer kinds: dense, half, topk");
ABSL_FLAG(std::string, callers, "1,4", "threads calling at once, comma-separated");
ABSL_FLAG(std::string, precision, "exact", "exact or fast (every window's precision)");
ABSL_FLAG(int, top_k, 100, "states kept per frame for topk");
ABSL_FLAG(int, repeats, 20, "timed calls per caller (median reported)");
ABSL_FLAG(int64_t, pinned_scores_mb, 1024,
          "CudaBackendOptions::pinned_scores_bytes in MiB (0: dense scores copied into each result)");

namespace gmmscore {
namespace {

std::vector<int> Ints(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view s : absl::StrSplit(text, ',')) {
    int n = 0;
    if (absl::SimpleAtoi(s, &n) && n > 0) out.push_back(n);
  }
  return out;
}

// One caller's windows and results for a batch of `frames` frames.
struct Batch {
  std::vector<FloatMatrix> features;
  std::vector<ScoreResult> results;
  std::vector<ScoreWindow> windows;
};

Batch MakeBatch(const DiagGmmModel& model, const PreparedModel& prepared, int frames, int chunk,
                const std::string& kind, Precision precision, uint64_t seed) {
  Batch batch;
  const int count = std::max(1, frames / chunk);
  batch.results.resize(count);
  for (int w = 0; w < count; ++w) batch.features.push_back(GenerateSyntheticFeatures(model, chunk, seed + w));
  for (int w = 0; w < count; ++w) {
    ScoreWindow window{.model = &prepared,
                       .features = batch.features[w].view(),
                       .result = &batch.results[w],
                       .precision = precision};
    if (kind == "topk") window.select.top_k = absl::GetFlag(FLAGS_top_k);
    if (kind == "half") window.half_from_best = true;
    batch.windows.push_back(window);
  }
  return batch;
}

// Median seconds of one ScoreBatch call of each of `callers` threads calling
// at once; -1 on an error (printed).
double TimeCalls(ScoringBackend& backend, std::vector<Batch>& batches, int repeats) {
  std::vector<std::vector<double>> seconds(batches.size());
  std::vector<std::string> errors(batches.size());
  std::vector<std::thread> threads;
  for (size_t c = 0; c < batches.size(); ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < repeats + 2; ++i) {
        const absl::Time start = absl::Now();
        const absl::Status status = backend.ScoreBatch(batches[c].windows, {});
        if (!status.ok()) {
          errors[c] = status.ToString();
          return;
        }
        if (i >= 2) seconds[c].push_back(absl::ToDoubleSeconds(absl::Now() - start));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  for (size_t c = 0; c < batches.size(); ++c) {
    if (!errors[c].empty()) {
      std::fprintf(stderr, "ScoreBatch failed: %s\n", errors[c].c_str());
      return -1;
    }
    all.insert(all.end(), seconds[c].begin(), seconds[c].end());
  }
  std::sort(all.begin(), all.end());
  return all[all.size() / 2];
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage("cost of the daemon's backend calls by answer kind (CUDA)");
  absl::ParseCommandLine(argc, argv);
  std::vector<int> shape = Ints(absl::StrReplaceAll(absl::GetFlag(FLAGS_config), {{"x", ","}}));
  if (shape.size() != 3) {
    std::fprintf(stderr, "--config must be STATESxGAUSSIANSxDIM\n");
    return 2;
  }
  absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
      {.num_states = shape[0], .min_gaussians = shape[1], .max_gaussians = shape[1], .dim = shape[2], .seed = 1});
  absl::StatusOr<std::unique_ptr<ScoringBackend>> backend =
      CreateCudaBackend(0, {.pinned_scores_bytes = absl::GetFlag(FLAGS_pinned_scores_mb) << 20,
                            .pinned_scores_at_start = true});
  if (!model.ok() || !backend.ok()) {
    std::fprintf(stderr, "setup failed: %s / %s\n", model.status().ToString().c_str(),
                 backend.status().ToString().c_str());
    return 1;
  }
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(model));
  absl::StatusOr<std::shared_ptr<const PreparedModel>> prepared = (*backend)->Prepare(shared);
  if (!prepared.ok()) {
    std::fprintf(stderr, "prepare failed: %s\n", prepared.status().ToString().c_str());
    return 1;
  }
  const Precision precision =
      absl::GetFlag(FLAGS_precision) == "fast" ? Precision::kFast : Precision::kExact;
  const int chunk = absl::GetFlag(FLAGS_chunk_frames);
  std::printf("model %s, %s precision, %d-frame windows, pinned scores %lld MiB; median of %d calls "
              "per caller\n",
              absl::GetFlag(FLAGS_config).c_str(), absl::GetFlag(FLAGS_precision).c_str(), chunk,
              static_cast<long long>(absl::GetFlag(FLAGS_pinned_scores_mb)), absl::GetFlag(FLAGS_repeats));
  std::printf("%-6s %7s %7s %10s %10s %12s\n", "kind", "frames", "callers", "ms/call", "us/frame",
              "frames/s");
  const std::vector<std::string> kinds = absl::StrSplit(absl::GetFlag(FLAGS_kinds), ',');
  for (const std::string& kind : kinds) {
    for (int frames : Ints(absl::GetFlag(FLAGS_batch_frames))) {
      for (int callers : Ints(absl::GetFlag(FLAGS_callers))) {
        std::vector<Batch> batches;
        for (int c = 0; c < callers; ++c) {
          batches.push_back(MakeBatch(*shared, **prepared, frames, chunk, kind, precision, 100 * c + 7));
        }
        const double seconds = TimeCalls(**backend, batches, absl::GetFlag(FLAGS_repeats));
        if (seconds < 0) return 1;
        const double per_call_frames = static_cast<double>(batches[0].windows.size()) * chunk;
        std::printf("%-6s %7.0f %7d %10.3f %10.2f %12.0f\n", kind.c_str(), per_call_frames, callers,
                    seconds * 1e3, seconds * 1e6 / per_call_frames,
                    callers * per_call_frames / seconds);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) { return gmmscore::Main(argc, argv); }
