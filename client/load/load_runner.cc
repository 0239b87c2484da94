#include "client/load/load_runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "client/load/connection_plan.h"
#include "client/load/load_queues.h"
#include "client/load/load_stream.h"
#include "client/load/pacer.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace gmmscore::load {
namespace {

// A quarter of the cores, 2 to 8: the generators share the host with the
// daemon, and several of them run at once (tools/gpu_points.sh).
int DefaultCqThreads() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 4, 2, 8);
}

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerFrame = 10'000'000;  // 10 ms frame shift

int64_t SecondsToNs(double s) { return static_cast<int64_t>(s * kNsPerSecond); }

void SleepUntil(int64_t t_ns) {
  const int64_t now = NowNs();
  if (t_ns > now) std::this_thread::sleep_for(std::chrono::nanoseconds(t_ns - now));
}

// Counts the streams whose done callback has run.
class DoneCounter {
 public:
  void Add() {
    absl::MutexLock lock(&mu_);
    ++done_;
  }
  // Waits until `n` are done or `timeout` passes; true if all are done.
  bool WaitFor(int n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto all_done = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&all_done), timeout);
  }

 private:
  absl::Mutex mu_;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
};

// One HTTP/2 connection per channel: distinct arguments keep gRPC from
// sharing a subchannel between them.
struct Connection {
  std::shared_ptr<grpc::Channel> channel;  // the streams' (LoadStream::Start)
  std::unique_ptr<v1::AcousticScorer::Stub> stub;  // GetServerStats
};

absl::StatusOr<std::vector<Connection>> Connect(const std::string& server, int channels,
                                                const std::vector<GrpcArg>& grpc_args,
                                                absl::Duration timeout) {
  std::vector<Connection> connections;
  const auto deadline = absl::ToChronoTime(absl::Now() + timeout);
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("gmmscore.load.channel", c);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    ApplyGrpcArgs(grpc_args, &args);  // after ours, as gmmscored adds its --grpc_arg
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(deadline)) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot connect to gmmscored at %s within %s (is it running and listening there?)",
          server, absl::FormatDuration(timeout)));
    }
    connections.push_back({channel, v1::AcousticScorer::NewStub(channel)});
  }
  return connections;
}

// User + system CPU seconds of this process.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

std::optional<v1::GetServerStatsResponse> ReadServerStats(v1::AcousticScorer::Stub* stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::GetServerStatsResponse response;
  if (!stub->GetServerStats(&context, {}, &response).ok()) return std::nullopt;
  return response;
}

// One end of a measurement: the server's counters and this process's CPU.
struct Snapshot {
  std::optional<v1::GetServerStatsResponse> server;
  double cpu_s = 0;
  int64_t at_ns = 0;
};

Snapshot TakeSnapshot(v1::AcousticScorer::Stub* stub) {
  return {ReadServerStats(stub), ProcessCpuSeconds(), NowNs()};
}

std::vector<ChunkRecord> SnapshotRecords(const std::vector<std::unique_ptr<LoadStream>>& streams) {
  std::vector<ChunkRecord> records;
  for (const auto& stream : streams) {
    std::vector<ChunkRecord> own = stream->SnapshotRecords();
    records.insert(records.end(), own.begin(), own.end());
  }
  return records;
}

// While whole windows fit before max_end and the last ones disagree
// (CheckStability), measures one more window: moves window->end_ns and
// takes *after again.
void ExtendUntilStable(const std::vector<std::unique_ptr<LoadStream>>& streams,
                       const StabilityRule& rule, int64_t window_ns, int64_t period,
                       int64_t max_end, v1::AcousticScorer::Stub* stats_stub,
                       MeasureWindow* window, Snapshot* after) {
  window_ns = std::max<int64_t>(1, window_ns);
  while (window->end_ns + window_ns <= max_end) {
    // Let the answers to the chunks due before the end arrive.
    std::this_thread::sleep_for(std::chrono::nanoseconds(2 * period + 50'000'000));
    const PointMetrics so_far =
        ComputeMetrics(SnapshotRecords(streams), *window,
                       {.late_ns = period, .window_ns = window_ns,
                        .streams = static_cast<int>(streams.size())});
    if (CheckStability(so_far.windows, rule).stable) return;
    window->end_ns += window_ns;
    SleepUntil(window->end_ns);
    *after = TakeSnapshot(stats_stub);
  }
}

// Every stream's records, and its final status and stray answers counted
// into *result. Call after every stream is done.
std::vector<ChunkRecord> TallyStreams(const std::vector<std::unique_ptr<LoadStream>>& streams,
                                      PointResult* result) {
  std::vector<ChunkRecord> records;
  for (const auto& stream : streams) {
    records.insert(records.end(), stream->records().begin(), stream->records().end());
    const grpc::Status& status = stream->status();
    ++result->stream_status[StatusCodeName(status.error_code())];
    if (!status.ok() && result->streams_failed++ == 0) {
      result->first_error =
          absl::StrFormat("%s: %s", StatusCodeName(status.error_code()), status.error_message());
    }
    const auto answered = [](const ChunkRecord& r) { return r.answered_ns != 0; };
    if (!status.ok() && std::any_of(stream->records().begin(), stream->records().end(), answered)) {
      ++result->streams_failed_after_answers;
    }
    result->unexpected_answers += stream->unexpected_answers();
  }
  return records;
}

// From the first chunk's due time to just after the last event.
MeasureWindow SpanOf(const std::vector<ChunkRecord>& records) {
  if (records.empty()) return {};
  MeasureWindow window{.start_ns = std::numeric_limits<int64_t>::max(), .end_ns = 0};
  for (const ChunkRecord& r : records) {
    window.start_ns = std::min(window.start_ns, r.due_ns);
    window.end_ns = std::max(window.end_ns, std::max(r.due_ns, r.answered_ns) + 1);
  }
  return window;
}

}  // namespace

std::string StatusCodeName(int code) {
  static const char* const kNames[] = {
      "OK",               "CANCELLED",         "UNKNOWN",      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND",        "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",    "OUT_OF_RANGE",
      "UNIMPLEMENTED",    "INTERNAL",          "UNAVAILABLE",  "DATA_LOSS",
      "UNAUTHENTICATED"};
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
  return absl::StrFormat("CODE_%d", code);
}

LoadRunner::LoadRunner(RunOptions options, const FeatureSource* features,
                       AnswerVerifier* verifier)
    : options_(std::move(options)), features_(features), verifier_(verifier) {}

absl::StatusOr<PointResult> LoadRunner::Run(int num_streams) {
  const RunOptions& o = options_;
  PointResult result;
  result.streams = num_streams;
  result.realtime = o.realtime;
  result.chunk_frames = o.chunk_frames;
  result.channels =
      o.channels > 0 ? o.channels : DefaultConnections(num_streams, o.answer_bytes_per_stream_s);
  result.offered_frames_per_s = o.realtime ? num_streams * kFramesPerSecond : 0.0;

  absl::StatusOr<std::vector<Connection>> connections =
      Connect(o.server, result.channels, o.grpc_args, o.connect_timeout);
  if (!connections.ok()) return connections.status();
  v1::AcousticScorer::Stub* stats_stub = (*connections)[0].stub.get();

  const int64_t period = o.chunk_frames * kNsPerFrame;
  const int64_t ramp = SecondsToNs(o.ramp_s);
  const bool by_chunks = o.chunks > 0;
  // Stream i opens at t0 + offset_i and its first chunk is due one period
  // later, so that its config is there first.
  const int64_t t0 = NowNs() + 20'000'000;
  auto offset = [&](int i) {
    return (ramp > 0 ? ramp : period) * static_cast<int64_t>(i) / num_streams;
  };
  MeasureWindow window;
  int64_t max_end = std::numeric_limits<int64_t>::max();
  if (!by_chunks) {
    window.start_ns = t0 + std::max(ramp, period) + period + SecondsToNs(o.warmup_s);
    window.end_ns = window.start_ns + SecondsToNs(o.duration_s);
    max_end = window.start_ns + SecondsToNs(std::max(o.duration_s, o.max_duration_s));
  }

  Pacer pacer(o.pacer_threads);  // outlives the streams (declared first)
  std::optional<LoadQueues> queues;  // as do the queues
  if (o.stream_api == StreamApi::kCompletionQueue) {
    result.cq_threads = o.cq_threads > 0 ? o.cq_threads : DefaultCqThreads();
    queues.emplace(result.cq_threads);
  }
  DoneCounter done;
  std::vector<std::unique_ptr<LoadStream>> streams;
  Snapshot before, after;
  if (by_chunks) before = TakeSnapshot(stats_stub);
  for (int i = 0; i < num_streams; ++i) {
    const StreamPlan plan{.index = i,
                          .config = &o.config,
                          .chunk_frames = o.chunk_frames,
                          .realtime = o.realtime,
                          .max_outstanding = std::max(1, o.max_outstanding),
                          .first_due_ns = t0 + offset(i) + period,
                          .period_ns = period,
                          .max_chunks = o.chunks,
                          .audio = o.audio,
                          .samples_per_frame = o.samples_per_frame};
    streams.push_back(
        std::make_unique<LoadStream>(plan, features_, &pacer, verifier_, [&done] { done.Add(); }));
    streams.back()->StopAt(max_end);
    SleepUntil(t0 + offset(i));
    streams.back()->Start((*connections)[i % result.channels].channel.get(),
                          queues.has_value() ? queues->queue(i) : nullptr);
  }

  absl::Duration drain = absl::Seconds(o.drain_s);
  if (by_chunks) {
    // Real time: the last stream's last chunk is due at about ramp + chunks
    // periods; as fast as possible, allow a second per chunk.
    drain += absl::Nanoseconds(ramp + o.chunks * (o.realtime ? period : kNsPerSecond));
  } else {
    SleepUntil(window.start_ns);
    before = TakeSnapshot(stats_stub);
    SleepUntil(window.end_ns);
    after = TakeSnapshot(stats_stub);
    ExtendUntilStable(streams, o.stability, SecondsToNs(o.window_s), period, max_end, stats_stub,
                      &window, &after);
    const int64_t stop = NowNs();
    for (const auto& stream : streams) stream->StopAt(stop);
  }
  if (!done.WaitFor(num_streams, drain)) {
    for (const auto& stream : streams) stream->Cancel();
    done.WaitFor(num_streams, absl::InfiniteDuration());
  }
  if (by_chunks) after = TakeSnapshot(stats_stub);

  const std::vector<ChunkRecord> records = TallyStreams(streams, &result);
  if (by_chunks) window = SpanOf(records);
  const int64_t late = o.late_ms > 0 ? SecondsToNs(o.late_ms / 1000.0) : period;
  result.metrics = ComputeMetrics(records, window,
                                  {.late_ns = late,
                                   .window_ns = std::max<int64_t>(1, SecondsToNs(o.window_s)),
                                   .streams = num_streams});
  result.stability = CheckStability(result.metrics.windows, o.stability);
  if (verifier_ != nullptr) result.verify = verifier_->TakeCounts();
  if (before.server.has_value() && after.server.has_value()) {
    result.server = DiffServerStats(*before.server, *after.server);
  }
  if (after.at_ns > before.at_ns) {
    result.client_cpu_cores = (after.cpu_s - before.cpu_s) / ((after.at_ns - before.at_ns) * 1e-9);
  }
  result.within_slo = o.slo_ms > 0 && result.metrics.latency_ms.count > 0 &&
                      result.metrics.latency_ms.p99 <= o.slo_ms && result.streams_failed == 0 &&
                      result.metrics.chunks_unanswered == 0 &&
                      (!result.verify.has_value() || result.verify->mismatched == 0);
  return result;
}

absl::StatusOr<std::vector<int>> ParseStreamCounts(absl::string_view spec) {
  std::vector<int> counts;
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--streams=%s: want N, a,b,c or start:end:step with every count >= 1", spec));
  };
  const std::vector<absl::string_view> range = absl::StrSplit(spec, ':');
  if (range.size() == 3) {
    int start, end, step;
    if (!absl::SimpleAtoi(range[0], &start) || !absl::SimpleAtoi(range[1], &end) ||
        !absl::SimpleAtoi(range[2], &step) || start < 1 || end < start || step < 1) {
      return bad();
    }
    for (int n = start; n <= end; n += step) counts.push_back(n);
    return counts;
  }
  if (range.size() != 1) return bad();
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    int n;
    if (!absl::SimpleAtoi(part, &n) || n < 1) return bad();
    counts.push_back(n);
  }
  return counts;
}

absl::StatusOr<CapacitySearch> SearchCapacity(
    LoadRunner& runner, int start, int max, int resolution,
    const std::function<void(const PointResult&)>& on_point) {
  if (runner.options().slo_ms <= 0) {
    return absl::InvalidArgumentError("the capacity search needs --slo_ms > 0");
  }
  if (start < 1 || max < start) {
    return absl::InvalidArgumentError(
        absl::StrFormat("search range [%d, %d] is empty", start, max));
  }
  CapacitySearch search;
  auto probe = [&](int n) -> absl::StatusOr<bool> {
    absl::StatusOr<PointResult> point = runner.Run(n);
    if (!point.ok()) return point.status();
    on_point(*point);
    return point->within_slo;
  };
  // Grow geometrically until a point fails or max passes.
  int n = start;
  while (true) {
    absl::StatusOr<bool> pass = probe(n);
    if (!pass.ok()) return pass.status();
    if (!*pass) {
      search.first_failing = n;
      break;
    }
    search.best = n;
    if (n == max) return search;
    n = std::min(max, n * 2);
  }
  // Bisect (best, first_failing).
  while (search.first_failing - search.best >
         std::max({resolution, 1, search.best / 50})) {
    const int mid = search.best + (search.first_failing - search.best) / 2;
    absl::StatusOr<bool> pass = probe(mid);
    if (!pass.ok()) return pass.status();
    (*pass ? search.best : search.first_failing) = mid;
  }
  return search;
}

}  // namespace gmmscore::load
