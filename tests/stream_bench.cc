// gmmscored_bench: latency and throughput of the daemon's streaming path, in
// one process (daemon on loopback + clients), for docs/PERFORMANCE.md:
//
//   gmmscored_bench --backend cuda --states 2000 --gaussians 16 --streams 1,256
//
// For each stream count N: N concurrent streams each send --chunks chunks of
// --chunk_frames frames, every chunk after the answer to the previous one (a
// live decoder's pattern), after --warmup_chunks unmeasured ones. Reports the
// per-chunk round-trip latency (push to answer) and the aggregate frames/s,
// and how many chunks the scheduler put into one backend call. The engine
// alone (one Score call of chunk_frames, and of N * chunk_frames frames) is
// timed too, as the floor the daemon adds to.
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
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/backends/backend_factory.h"
#include "server/daemon.h"
#include "server/log.h"

ABSL_FLAG(std::string, backend, "auto", "scoring backend: auto, cpu, cuda, cuda:N");
ABSL_FLAG(int, states, 2000, "states of the synthetic model");
ABSL_FLAG(int, gaussians, 16, "Gaussians per state");
ABSL_FLAG(int, dim, 39, "feature dimension");
ABSL_FLAG(std::string, streams, "1,256", "comma-separated concurrent stream counts to measure");
ABSL_FLAG(int, chunk_frames, 10, "frames per chunk");
ABSL_FLAG(int, chunks, 50, "measured chunks per stream");
ABSL_FLAG(int, warmup_chunks, 5, "unmeasured chunks per stream first");
ABSL_FLAG(int64_t, max_batch_frames, 4096, "daemon --max_batch_frames");
ABSL_FLAG(int64_t, max_queue_delay_us, 1000, "daemon --max_queue_delay_us");
ABSL_FLAG(int, scheduler_workers, 2, "daemon --scheduler_workers");
ABSL_FLAG(int, channels, 8, "client connections the streams share");

namespace gmmscore {
namespace {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

// Median seconds of `repeats` Score calls of `frames` frames, engine only.
double TimeEngine(ScoringBackend& backend, const PreparedModel& model, const FloatMatrix& frames,
                  int repeats) {
  std::vector<double> seconds;
  ScoreResult result;
  for (int i = 0; i < repeats + 2; ++i) {
    const absl::Time start = absl::Now();
    if (!backend.Score(model, frames.view(), {}, &result).ok()) return -1.0;
    if (i >= 2) seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return Percentile(seconds, 0.5);
}

struct StreamRun {
  std::vector<double> latencies;  // seconds per measured chunk
  std::string error;
};

void RunOneStream(Client& client, const FloatMatrix& chunk, StreamRun* run) {
  v1::StreamConfig config;
  config.add_models("m");
  auto session = client.StartStream(config);
  const int warmup = absl::GetFlag(FLAGS_warmup_chunks);
  const int chunks = absl::GetFlag(FLAGS_chunks);
  for (int k = 0; k < warmup + chunks; ++k) {
    const absl::Time start = absl::Now();
    absl::Status pushed = (*session)->Push(chunk.view());
    absl::StatusOr<StreamAnswer> answer =
        pushed.ok() ? (*session)->Next() : absl::StatusOr<StreamAnswer>(pushed);
    if (!answer.ok()) {
      run->error = answer.status().ToString();
      return;
    }
    if (k >= warmup) run->latencies.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  absl::Status end = (*session)->Finish();
  if (!end.ok()) run->error = end.ToString();
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage("latency and throughput of gmmscored's streaming path");
  absl::ParseCommandLine(argc, argv);
  SetInfoLogging(false);
  auto model = GenerateSyntheticModel({.num_states = absl::GetFlag(FLAGS_states),
                                       .min_gaussians = absl::GetFlag(FLAGS_gaussians),
                                       .max_gaussians = absl::GetFlag(FLAGS_gaussians),
                                       .dim = absl::GetFlag(FLAGS_dim),
                                       .seed = 1});
  auto backend = CreateBackend(absl::GetFlag(FLAGS_backend));
  auto engine = CreateBackend(absl::GetFlag(FLAGS_backend));
  if (!model.ok() || !backend.ok() || !engine.ok()) {
    std::fprintf(stderr, "setup failed: %s %s\n", model.status().ToString().c_str(),
                 backend.status().ToString().c_str());
    return 1;
  }
  auto shared = std::make_shared<const DiagGmmModel>(*std::move(model));
  const int chunk_frames = absl::GetFlag(FLAGS_chunk_frames);
  const FloatMatrix chunk = GenerateSyntheticFeatures(*shared, chunk_frames, 2);
  std::printf("backend %s; model %d states x %d Gaussians, dim %d; chunks of %d frames\n",
              (*backend)->name().c_str(), shared->num_states(), absl::GetFlag(FLAGS_gaussians),
              shared->dim(), chunk_frames);

  std::vector<int> stream_counts;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_streams), ',')) {
    int n;
    if (absl::SimpleAtoi(s, &n) && n > 0) stream_counts.push_back(n);
  }

  auto engine_model = (*engine)->Prepare(shared);
  if (!engine_model.ok()) return 1;
  for (int n : stream_counts) {
    const FloatMatrix frames = GenerateSyntheticFeatures(*shared, int64_t{n} * chunk_frames, 3);
    const double seconds = TimeEngine(**engine, **engine_model, frames, 10);
    std::printf("engine alone, one Score call of %6d frames: %8.3f ms, %10.0f frames/s\n",
                n * chunk_frames, seconds * 1e3, n * chunk_frames / seconds);
  }

  auto repository = ModelRepository::FromModels({{"m", shared}}, backend->get());
  DaemonOptions options;
  options.listen_address = "127.0.0.1:0";
  options.scheduler.max_batch_frames = absl::GetFlag(FLAGS_max_batch_frames);
  options.scheduler.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  options.scheduler.num_workers = absl::GetFlag(FLAGS_scheduler_workers);
  options.limits.max_streams = 100000;
  auto daemon = Daemon::Start(*std::move(backend), *std::move(repository), options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < absl::GetFlag(FLAGS_channels); ++c) {
    auto client = Client::Connect((*daemon)->address());
    if (!client.ok()) return 1;
    clients.push_back(*std::move(client));
  }

  for (int n : stream_counts) {
    const BatchSchedulerStats before = (*daemon)->scheduler_stats();
    std::vector<StreamRun> runs(n);
    std::vector<std::thread> threads;
    const absl::Time start = absl::Now();
    for (int i = 0; i < n; ++i) {
      threads.emplace_back(
          [&, i] { RunOneStream(*clients[i % clients.size()], chunk, &runs[i]); });
    }
    for (std::thread& t : threads) t.join();
    const double wall = absl::ToDoubleSeconds(absl::Now() - start);
    const BatchSchedulerStats after = (*daemon)->scheduler_stats();
    std::vector<double> latencies;
    for (const StreamRun& run : runs) {
      if (!run.error.empty()) {
        std::fprintf(stderr, "stream failed: %s\n", run.error.c_str());
        return 1;
      }
      latencies.insert(latencies.end(), run.latencies.begin(), run.latencies.end());
    }
    const int total_chunks = n * (absl::GetFlag(FLAGS_warmup_chunks) + absl::GetFlag(FLAGS_chunks));
    const double calls = after.group_calls - before.group_calls;
    std::printf(
        "%4d streams x %d-frame chunks: latency p50 %7.3f ms  p90 %7.3f ms  p99 %7.3f ms; "
        "%10.0f frames/s (%d chunks in %.2f s; %.1f chunks per backend call)\n",
        n, chunk_frames, Percentile(latencies, 0.5) * 1e3, Percentile(latencies, 0.9) * 1e3,
        Percentile(latencies, 0.99) * 1e3, double{total_chunks} * chunk_frames / wall,
        total_chunks, wall, calls > 0 ? (after.jobs - before.jobs) / calls : 0.0);
  }
  clients.clear();
  (*daemon)->Drain(absl::Seconds(5));
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) { return gmmscore::Main(argc, argv); }
