// LoadRunner: one measured point of a load test — N concurrent StreamScore
// streams against a gmmscored — and the sweeps built from points.
//
//   LoadRunner runner(options, &features, verifier.get());
//   GMM_ASSIGN_OR_RETURN(PointResult point, runner.Run(/*streams=*/64));
//   GMM_ASSIGN_OR_RETURN(std::vector<int> counts, ParseStreamCounts("8:64:8"));
//   GMM_ASSIGN_OR_RETURN(CapacitySearch best, SearchCapacity(runner, 8, 4096, 1, on_point));
//
// A point: the streams are spread over several channels (each its own
// HTTP/2 connection: distinct channel arguments and a local subchannel pool),
// started one after another over ramp_s (which also spreads their chunk
// phases), then measured for duration_s after warmup_s; every chunk is
// recorded (load_stats.h) and the server's own counters are read at both
// ends of the measurement (GetServerStats). With --chunks instead of a
// duration, each stream sends that many chunks and every chunk counts.
//
// Thread safety: a runner runs one point at a time.
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_RUNNER_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_RUNNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/load/answer_verifier.h"
#include "client/load/audio_source.h"
#include "client/load/feature_source.h"
#include "client/load/load_stats.h"
#include "client/load/server_breakdown.h"
#include "gmmscore/v1/scorer.pb.h"
#include "proto/grpc_args.h"

namespace gmmscore::load {

// The gRPC API that carries the streams (load_call.h).
enum class StreamApi { kCompletionQueue, kCallback };

struct RunOptions {
  std::string server;  // HOST:PORT
  // Models, fusion and output options of every stream.
  v1::StreamConfig config;
  int chunk_frames = 10;
  // Real time: each stream sends a chunk every chunk_frames * 10 ms. Else as
  // fast as the server answers, max_outstanding chunks unanswered at most.
  bool realtime = true;
  int max_outstanding = 1;
  double duration_s = 10;  // measured time (unless chunks > 0)
  int64_t chunks = 0;      // > 0: each stream sends this many chunks, all measured
  double ramp_s = 1;       // streams start evenly spread over this
  double warmup_s = 1;     // after the ramp, not measured
  double window_s = 2;     // stability windows
  // > duration_s: keep measuring whole windows until the stability rule
  // holds or this much time was measured.
  double max_duration_s = 0;
  StabilityRule stability;
  // 0: DefaultConnections(streams, answer_bytes_per_stream_s), 1 to 64
  // (connection_plan.h).
  int channels = 0;
  double answer_bytes_per_stream_s = 0;
  // gRPC arguments of every channel (--grpc_arg): flow-control windows, frame sizes.
  std::vector<GrpcArg> grpc_args;
  int pacer_threads = 1;
  StreamApi stream_api = StreamApi::kCompletionQueue;
  int cq_threads = 0;     // kCompletionQueue: queues, one thread each; 0: a quarter of the cores, 2 to 8
  double late_ms = 0;     // 0: one chunk's duration
  double slo_ms = 0;      // > 0: a point passes when p99 <= slo_ms and nothing failed
  double drain_s = 10;    // after the stop: how long the last answers may take
  absl::Duration connect_timeout = absl::Seconds(10);
  // Audio streams (config.audio set): where their samples come from (must
  // outlive the runner), and the samples of one frame.
  const AudioSource* audio = nullptr;
  int samples_per_frame = 160;
};

struct PointResult {
  int streams = 0;
  int channels = 0;
  int cq_threads = 0;  // 0: on the callback API
  bool realtime = true;
  int chunk_frames = 0;
  double offered_frames_per_s = 0;  // real time: streams * 100; else 0
  PointMetrics metrics;
  StabilityVerdict stability;
  // Final status of every stream by gRPC code name ("OK", "RESOURCE_EXHAUSTED"...).
  std::map<std::string, int64_t> stream_status;
  int64_t streams_failed = 0;  // ended with a status other than OK
  // Of those, streams with at least one chunk answered first: admitted
  // streams that a failure cut short (a full queue, a drain). The others
  // failed before any answer: refused at their start (too many streams,
  // an overloaded server), which a client may simply open again later, or
  // whose first chunk already failed (a full queue).
  int64_t streams_failed_after_answers = 0;
  std::string first_error;     // "CODE: message" of the first failure
  int64_t unexpected_answers = 0;
  std::optional<VerifyCounts> verify;
  std::optional<ServerBreakdown> server;
  // CPU time this load generator used over the measurement / its length:
  // the cores it took from the machine (it shares them with a local server).
  double client_cpu_cores = 0;
  // slo_ms > 0: p99 <= slo_ms, no stream failed, no chunk unanswered, no
  // verification mismatch.
  bool within_slo = false;
};

// "OK", "CANCELLED", ... "UNAUTHENTICATED"; "CODE_<n>" for others.
std::string StatusCodeName(int code);

class LoadRunner {
 public:
  // `features` (and `verifier`, which may be null) must outlive the runner.
  LoadRunner(RunOptions options, const FeatureSource* features, AnswerVerifier* verifier);

  // Runs one point with `streams` streams. UNAVAILABLE when the server
  // cannot be reached; failures of streams are results, not errors.
  absl::StatusOr<PointResult> Run(int streams);

  const RunOptions& options() const { return options_; }

 private:
  const RunOptions options_;
  const FeatureSource* const features_;
  AnswerVerifier* const verifier_;
};

// "N", "a,b,c" or "start:end:step" (end included) -> stream counts, each
// >= 1. INVALID_ARGUMENT otherwise.
absl::StatusOr<std::vector<int>> ParseStreamCounts(absl::string_view spec);

struct CapacitySearch {
  int best = 0;           // most streams that passed (0: none did)
  int first_failing = 0;  // fewest streams that failed (0: none did, up to max)
};

// The largest stream count in [start, max] whose point is within_slo
// (runner.options().slo_ms must be > 0): doubles from `start` while points
// pass, then bisects between the last pass and the first failure until they
// are `resolution` apart or 2% of the pass. Calls on_point after every point.
absl::StatusOr<CapacitySearch> SearchCapacity(
    LoadRunner& runner, int start, int max, int resolution,
    const std::function<void(const PointResult&)>& on_point);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_RUNNER_H_
