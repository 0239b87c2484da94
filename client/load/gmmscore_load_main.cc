// gmmscore-load: load generator and capacity finder for gmmscored.
//
//   gmmscore-load --server 127.0.0.1:50051 --model am --streams 8:64:8 --duration_s 10 \
//                 --json out.json --csv out.csv --plot out.svg
//   gmmscore-load --server ... --model am --streams 16 --slo_ms 50 --search --search_max 4096
//
// Flags around LoadRunner (load_runner.h); the README's "Capacity testing"
// section explains the output.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/adaptation_config.h"
#include "client/load/answer_verifier.h"
#include "client/load/feature_source.h"
#include "client/load/connection_plan.h"
#include "client/load/load_report.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/core/version.h"
#include "client/fusion_method.h"
#include "client/load/audio_source.h"
#include "proto/grpc_args.h"
#include "client/load/load_runner.h"
#include "client/load/svg_plot.h"
#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "kernels/core/mutex_mode.h"
#include "kernels/io/model_loader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "gmmscored address, HOST:PORT.");
ABSL_FLAG(std::string, model, "",
          "Model name(s) every stream scores with, comma-separated (several: fused, see "
          "--fusion). Required.");
ABSL_FLAG(std::string, streams, "1",
          "Concurrent streams: N, a list a,b,c, or a sweep start:end:step (end included). With "
          "--search: where the search starts.");
ABSL_FLAG(int32_t, chunk_frames, 10, "Frames per chunk (10 = 100 ms of speech at 100 frames/s).");
ABSL_FLAG(bool, realtime, true,
          "Send each stream's chunks at real-time pace (one every chunk_frames * 10 ms); "
          "--norealtime sends as fast as the server answers (see --max_outstanding).");
ABSL_FLAG(int32_t, max_outstanding, 1,
          "--norealtime: chunks a stream may have sent but not had answered.");
ABSL_FLAG(double, duration_s, 10, "Measured seconds per point (after --ramp_s and --warmup_s).");
ABSL_FLAG(int64_t, chunks, 0,
          "Instead of --duration_s: chunks each stream sends; every chunk is measured.");
ABSL_FLAG(double, ramp_s, 1, "Streams start evenly spread over this many seconds.");
ABSL_FLAG(double, warmup_s, 1, "Seconds after the ramp that are not measured.");
ABSL_FLAG(double, window_s, 2, "Length of the stability windows, seconds.");
ABSL_FLAG(int32_t, stability_windows, 3,
          "Stability: this many last windows must agree (throughput and p99 latency).");
ABSL_FLAG(double, stability_pct, 10, "Stability: the tolerance, percent of the windows' mean.");
ABSL_FLAG(std::string, stability_latency, "mean",
          "Stability: the latency the windows must agree on, 'mean' (perf_analyzer's default) or "
          "'p99'.");
ABSL_FLAG(double, max_duration_s, 0,
          "> --duration_s: keep measuring whole windows until stable or this long.");
ABSL_FLAG(int32_t, channels, 0,
          "gRPC channels (separate HTTP/2 connections) the streams are spread over; 0 = one per "
          "64 MB/s of answers (from the models' states and the output options) or per 250 "
          "streams, whichever is more, 1 to 64. The daemon reads its connections one at a time "
          "(2000 fast top_k streams: the way in 0.4-1.1 ms over 8, 14 over 63) and one "
          "connection's answers go one at a time (float32: 375 MB/s a connection passed at 4.2 "
          "ms, 750 took 27) (docs/PERFORMANCE.md, stops 54, 55).");
ABSL_FLAG(std::vector<std::string>, grpc_arg, {},
          "gRPC arguments of the channels that carry the streams, NAME=VALUE, comma-separated, "
          "given once (a second --grpc_arg replaces the first), e.g. "
          "grpc.http2.lookahead_bytes=4194304: HTTP/2 flow-control windows, frame sizes; added "
          "after the load generator's own. gRPC ignores names it does not know.");
ABSL_FLAG(std::string, stream_api, "cq",
          "The gRPC API that carries the streams: 'cq' (completion queues, each drained by a "
          "thread of gmmscore-load's: --cq_threads) or 'callback' (gRPC's callback reactors on "
          "the library's shared threads).");
ABSL_FLAG(int32_t, cq_threads, 0,
          "With --stream_api cq: completion queues, one thread each; 0: a quarter of the cores, 2 "
          "to 8.");
ABSL_FLAG(int32_t, pacer_threads, 1, "Threads that keep the real-time schedule.");
ABSL_FLAG(double, late_ms, 0, "A chunk is late above this latency; 0 = one chunk's duration.");
ABSL_FLAG(double, slo_ms, 0, "p99 chunk latency objective: points are marked pass/fail.");
ABSL_FLAG(bool, search, false,
          "Find the most real-time streams whose p99 <= --slo_ms with no failures: double from "
          "--streams until a point fails, then bisect.");
ABSL_FLAG(int32_t, search_max, 4096, "--search: most streams tried.");
ABSL_FLAG(int32_t, search_resolution, 1,
          "--search: stop when pass and fail are this close (or 2% of the pass).");
ABSL_FLAG(std::string, features, "",
          "Feature table to stream (ark:FILE, scp:FILE, htk:FILE or htk:SCRIPT); empty = synthetic frames of the "
          "model's dimension (from ListModels).");
ABSL_FLAG(std::string, audio, "",
          "Speech files (WAV PCM16 mono, comma-separated): every stream is an audio stream "
          "(StreamConfig.audio) sending --chunk_frames x 10 ms of them per chunk, and the server "
          "runs the models' front end. --chunk_frames >= 8; no --verify_fraction.");
ABSL_FLAG(int, audio_sample_rate, 16000, "--audio: the models' sample rate (raw files are read at it).");
ABSL_FLAG(std::string, model_file, "",
          "The file(s) the server loaded for --model, comma-separated in the same order: "
          "synthetic frames are drawn from the first, and --verify_fraction checks answers "
          "against them.");
ABSL_FLAG(double, verify_fraction, 0,
          "Share of answers scored again offline (LoadModel + CPU backend) and compared.");
ABSL_FLAG(double, verify_tolerance, 1e-3,
          "Verification: |server - offline| <= tolerance * max(1, |offline|).");
ABSL_FLAG(bool, verify_after_run, false,
          "Verification: hold the sampled answers (up to --verify_memory_mb) and check them when "
          "each run (point) ends, on --verify_threads threads, instead of beside the load at the "
          "lowest priority, where what it has no time for is skipped.");
ABSL_FLAG(int, verify_memory_mb, 512, "--verify_after_run: held answers' memory at most (MiB).");
ABSL_FLAG(int, verify_threads, 4, "--verify_after_run: threads that check the held answers.");
ABSL_FLAG(std::string, fusion, "max", "Several models: max, logsumexp (or log_sum_exp) or posterior.");
ABSL_FLAG(bool, fused_only, false, "Several models: answers carry only the fused matrix.");
ABSL_FLAG(bool, frame_totals, false, "Answers carry per-frame totals too.");
ABSL_FLAG(float, beam, 0,
          "Sparse answers: per frame only the states within this many nats of the frame's "
          "best (0: every state). Cuts the answer volume, as a pruning decoder would ask.");
ABSL_FLAG(int, top_k, 0, "Sparse answers: per frame at most this many best states (0: no limit).");
ABSL_FLAG(bool, float16, false,
          "Answers in half precision (OutputOptions.float16): half the bytes; values within "
          "2^-11 of their distance from the frame's best state (verification allows that).");
ABSL_FLAG(bool, server_timing, false,
          "Ask for the server's times in every answer (OutputOptions.server_timing) and split "
          "each point's latency after the send into: to the server's read, in the server, and "
          "back to this read. The directions need this host's clock to agree with the server's "
          "(the same host, or synchronised clocks); the way in includes any time the server "
          "paused reading the stream (its chunks in flight or unsent answers at their limit).");
ABSL_FLAG(std::string, adaptation, "none",
          "Live adaptation of every stream (StreamConfig.adaptation): none, fmllr or map (MAP "
          "means), driven by the first model's own posteriors. Not with --verify_fraction "
          "(adapted answers differ from the offline scores by design).");
ABSL_FLAG(int64_t, adaptation_start_frames, 300,
          "Adaptation: the first update after this many frames of each stream.");
ABSL_FLAG(int64_t, adaptation_every_frames, 500,
          "Adaptation: then one update every this many frames.");
ABSL_FLAG(double, drain_s, 10, "After the stop: seconds the last answers may take.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of synthetic frames and of the verification sample.");
ABSL_FLAG(std::string, json, "", "Write the report as JSON here.");
ABSL_FLAG(std::string, csv, "", "Write one CSV row per point here.");
ABSL_FLAG(std::string, plot, "", "Write an SVG plot (latency and throughput vs streams) here.");
ABSL_FLAG(std::string, replot, "",
          "Run nothing: read the points of earlier --csv files (comma-separated) and write "
          "--plot (and --json/--csv) from them; the capacity line marks the most streams that "
          "passed below every failure. --model and --slo_ms label the plot.");

namespace gmmscore::load {
namespace {

absl::StatusOr<v1::ListModelsResponse> ListModels(const std::string& server) {
  auto channel = grpc::CreateChannel(server, grpc::InsecureChannelCredentials());
  auto stub = v1::AcousticScorer::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListModelsResponse response;
  const grpc::Status status = stub->ListModels(&context, {}, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrFormat("ListModels on %s: %s: %s", server,
                                                  StatusCodeName(status.error_code()),
                                                  status.error_message()));
  }
  return response;
}

absl::StatusOr<v1::StreamConfig> ConfigFromFlags(const std::vector<std::string>& models) {
  v1::StreamConfig config;
  for (const std::string& m : models) config.add_models(m);
  absl::StatusOr<v1::FusionMethod> method = FusionMethodFor(absl::GetFlag(FLAGS_fusion));
  if (!method.ok()) return method.status();
  config.mutable_fusion()->set_method(*method);
  config.mutable_output()->set_fused_only(absl::GetFlag(FLAGS_fused_only));
  config.mutable_output()->set_frame_totals(absl::GetFlag(FLAGS_frame_totals));
  config.mutable_output()->set_beam(absl::GetFlag(FLAGS_beam));
  config.mutable_output()->set_top_k(static_cast<uint32_t>(std::max(0, absl::GetFlag(FLAGS_top_k))));
  config.mutable_output()->set_float16(absl::GetFlag(FLAGS_float16));
  config.mutable_output()->set_server_timing(absl::GetFlag(FLAGS_server_timing));
  config.set_stream_id("gmmscore-load");
  absl::StatusOr<std::optional<v1::AdaptationConfig>> adaptation =
      AdaptationConfigFor(absl::GetFlag(FLAGS_adaptation), absl::GetFlag(FLAGS_adaptation_start_frames),
                          absl::GetFlag(FLAGS_adaptation_every_frames));
  if (!adaptation.ok()) return adaptation.status();
  if (adaptation->has_value()) {
    if (absl::GetFlag(FLAGS_verify_fraction) > 0) {
      return absl::InvalidArgumentError(
          "--adaptation changes the answers after each update; --verify_fraction cannot check "
          "them against offline scores (use one or the other)");
    }
    *config.mutable_adaptation() = **adaptation;
  }
  return config;
}

std::string CommandLine(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return absl::StrJoin(args, " ");
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "gmmscore-load: %s\n", status.ToString().c_str());
  return 1;
}

// --replot: the plot of earlier runs' CSV files, without a server.
int Replot(const std::vector<std::string>& models, const std::string& command_line) {
  LoadReport report;
  for (absl::string_view path : absl::StrSplit(absl::GetFlag(FLAGS_replot), ',',
                                               absl::SkipEmpty())) {
    std::FILE* file = std::fopen(std::string(path).c_str(), "rb");
    if (file == nullptr) {
      return Fail(absl::NotFoundError(absl::StrFormat("cannot open %s", path)));
    }
    std::string text;
    char buffer[65536];
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) text.append(buffer, n);
    std::fclose(file);
    absl::StatusOr<std::vector<PointResult>> points = ReadPointsCsv(text);
    if (!points.ok()) return Fail(points.status());
    report.points.insert(report.points.end(), points->begin(), points->end());
  }
  if (report.points.empty()) return Fail(absl::InvalidArgumentError("--replot: no points"));
  report.run = {.models = absl::StrJoin(models, ","),
                .realtime = report.points.front().realtime,
                .chunk_frames = report.points.front().chunk_frames,
                .slo_ms = absl::GetFlag(FLAGS_slo_ms),
                .command_line = command_line};
  if (report.run.slo_ms > 0) report.search = CapacityOf(report.points);
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {absl::GetFlag(FLAGS_json), ReportJson(report)},
      {absl::GetFlag(FLAGS_csv), ReportCsv(report)},
      {absl::GetFlag(FLAGS_plot), CapacityPlotSvg(report)}};
  for (const auto& [path, contents] : outputs) {
    if (path.empty()) continue;
    absl::Status written = WriteFile(path, contents);
    if (!written.ok()) return Fail(written);
  }
  return 0;
}

// Keeps glibc from giving freed memory back to the kernel between answers.
// gRPC's read buffers for every 200 KB answer are allocated and freed on its
// threads; by default glibc trims each thread arena's top (madvise) and maps
// large blocks afresh, so the next answer faults the same pages back in:
// half of this process's CPU at 1000 answers a second on the project's VM
// (0.35 cores against 0.19 with these two settings, same load).
void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  KeepFreedMemory();
  absl::SetProgramUsageMessage(
      "load generator and capacity finder for gmmscored.\n\n"
      "  gmmscore-load --server HOST:PORT --model NAME --streams 8:64:8 [--slo_ms 50 --search]\n"
      "                [--json F] [--csv F] [--plot F.svg]\n\n"
      "Runs N concurrent StreamScore streams per point, each sending chunks of features at "
      "real-time pace (or as fast as possible), and reports throughput, chunk latency "
      "percentiles (from when a chunk was due to its answer), lateness, errors by status, "
      "stability, a verification sample and the server's own time breakdown.");
  // --help lists this program's flags (absl's default filter looks for a
  // file named after the program, gmmscore-load, and found none), and
  // --version prints the project's version.
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) { return absl::StrContains(file, "client/load/"); };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.version_string = [] { return VersionLine("gmmscore-load") + "\n"; };
  absl::SetFlagsUsageConfig(usage);
  const std::string command_line = CommandLine(argc, argv);
  absl::ParseCommandLine(argc, argv);

  const std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_model), ',', absl::SkipEmpty());
  if (models.empty()) return Fail(absl::InvalidArgumentError("--model is required"));
  if (!absl::GetFlag(FLAGS_replot).empty()) return Replot(models, command_line);
  absl::StatusOr<std::vector<int>> counts = ParseStreamCounts(absl::GetFlag(FLAGS_streams));
  if (!counts.ok()) return Fail(counts.status());
  if (absl::GetFlag(FLAGS_stability_latency) != "mean" &&
      absl::GetFlag(FLAGS_stability_latency) != "p99") {
    return Fail(absl::InvalidArgumentError("--stability_latency: mean or p99"));
  }
  if (absl::GetFlag(FLAGS_chunk_frames) < 1) {
    return Fail(absl::InvalidArgumentError("--chunk_frames must be >= 1"));
  }
  absl::StatusOr<v1::StreamConfig> config = ConfigFromFlags(models);
  if (!config.ok()) return Fail(config.status());

  absl::StatusOr<std::vector<GrpcArg>> grpc_args = ParseGrpcArgs(absl::GetFlag(FLAGS_grpc_arg));
  if (!grpc_args.ok()) return Fail(grpc_args.status());
  const std::string stream_api = absl::GetFlag(FLAGS_stream_api);
  if (stream_api != "cq" && stream_api != "callback") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--stream_api=", stream_api, ": want cq or callback")));
  }
  if (absl::GetFlag(FLAGS_cq_threads) < 0) {
    return Fail(absl::InvalidArgumentError("--cq_threads must be >= 0 (0: a quarter of the cores)"));
  }
  if (absl::GetFlag(FLAGS_cq_threads) > 0 && stream_api != "cq") {
    return Fail(absl::InvalidArgumentError("--cq_threads applies to --stream_api cq only"));
  }

  const std::string server = absl::GetFlag(FLAGS_server);
  absl::StatusOr<v1::ListModelsResponse> listed = ListModels(server);
  if (!listed.ok()) return Fail(listed.status());
  int dim = 0;
  std::string device;
  std::vector<int64_t> model_states;  // in config order, for the default channels
  for (const std::string& name : models) {
    for (const v1::ModelInfo& info : listed->models()) {
      if (info.name() != name) continue;
      model_states.push_back(info.num_states());
      if (name == models.front()) {
        dim = static_cast<int>(info.dim());
        device = info.device();
      }
    }
  }
  if (dim == 0 || model_states.size() != models.size()) {
    return Fail(absl::NotFoundError(absl::StrFormat(
        "the server at %s does not serve each of the models '%s' once", server,
        absl::StrJoin(models, ","))));
  }

  // The model files, for synthetic frames and verification.
  std::vector<std::shared_ptr<const DiagGmmModel>> files(models.size());
  const std::vector<std::string> paths =
      absl::StrSplit(absl::GetFlag(FLAGS_model_file), ',', absl::SkipEmpty());
  for (size_t i = 0; i < paths.size() && i < files.size(); ++i) {
    absl::StatusOr<DiagGmmModel> model = LoadModel(paths[i]);
    if (!model.ok()) return Fail(model.status());
    files[i] = std::make_shared<const DiagGmmModel>(*std::move(model));
  }

  std::unique_ptr<FeatureSource> features;
  if (!absl::GetFlag(FLAGS_features).empty()) {
    absl::StatusOr<FeatureSource> source =
        FeatureSource::FromKaldiArchive(absl::GetFlag(FLAGS_features), dim);
    if (!source.ok()) return Fail(source.status());
    features = std::make_unique<FeatureSource>(*std::move(source));
  } else {
    features = std::make_unique<FeatureSource>(
        FeatureSource::Synthetic(dim, absl::GetFlag(FLAGS_seed), files.front().get()));
  }

  std::unique_ptr<AudioSource> audio;
  if (!absl::GetFlag(FLAGS_audio).empty()) {
    const int rate = absl::GetFlag(FLAGS_audio_sample_rate);
    if (absl::GetFlag(FLAGS_verify_fraction) > 0 || absl::GetFlag(FLAGS_chunk_frames) < 8 || rate % 100 != 0) {
      return Fail(absl::InvalidArgumentError(
          "--audio needs --chunk_frames >= 8 (one answer per chunk), no --verify_fraction and a "
          "--audio_sample_rate that is whole samples per 10 ms frame"));
    }
    absl::StatusOr<AudioSource> source =
        AudioSource::FromFiles(absl::StrSplit(absl::GetFlag(FLAGS_audio), ',', absl::SkipEmpty()), rate);
    if (!source.ok()) return Fail(source.status());
    audio = std::make_unique<AudioSource>(*std::move(source));
    config->mutable_audio()->set_encoding(v1::AudioStreamConfig::PCM16);
    config->mutable_audio()->set_sample_rate(rate);
  }

  std::unique_ptr<AnswerVerifier> verifier;
  const double verify_fraction = absl::GetFlag(FLAGS_verify_fraction);
  if (verify_fraction > 0) {
    if (paths.empty()) {
      return Fail(absl::InvalidArgumentError("--verify_fraction needs --model_file"));
    }
    if (models.size() > 1 && absl::GetFlag(FLAGS_fused_only)) {
      return Fail(absl::InvalidArgumentError(
          "--verify_fraction checks per-model matrices, which --fused_only leaves out"));
    }
    if (absl::GetFlag(FLAGS_verify_memory_mb) < 1 || absl::GetFlag(FLAGS_verify_threads) < 1) {
      return Fail(
          absl::InvalidArgumentError("--verify_memory_mb and --verify_threads must be >= 1"));
    }
    absl::StatusOr<std::unique_ptr<AnswerVerifier>> created = AnswerVerifier::Create(
        files, features.get(),
        {.fraction = verify_fraction, .tolerance = absl::GetFlag(FLAGS_verify_tolerance),
         .half_precision = absl::GetFlag(FLAGS_float16), .seed = absl::GetFlag(FLAGS_seed),
         .after_run = absl::GetFlag(FLAGS_verify_after_run),
         .max_held_bytes = int64_t{absl::GetFlag(FLAGS_verify_memory_mb)} << 20,
         .after_run_threads = absl::GetFlag(FLAGS_verify_threads)});
    if (!created.ok()) return Fail(created.status());
    verifier = *std::move(created);
    // The verifier scores on this host's CPU, beside the daemon under test.
    if (const std::string warning = BlasCoreWarning(); !warning.empty()) {
      std::fprintf(stderr, "gmmscore-load: warning: %s\n", warning.c_str());
    }
  }

  RunOptions options{
      .server = server,
      .config = *config,
      .chunk_frames = absl::GetFlag(FLAGS_chunk_frames),
      .realtime = absl::GetFlag(FLAGS_realtime),
      .max_outstanding = absl::GetFlag(FLAGS_max_outstanding),
      .duration_s = absl::GetFlag(FLAGS_duration_s),
      .chunks = absl::GetFlag(FLAGS_chunks),
      .ramp_s = absl::GetFlag(FLAGS_ramp_s),
      .warmup_s = absl::GetFlag(FLAGS_warmup_s),
      .window_s = absl::GetFlag(FLAGS_window_s),
      .max_duration_s = absl::GetFlag(FLAGS_max_duration_s),
      .stability = {.windows = absl::GetFlag(FLAGS_stability_windows),
                    .tolerance = absl::GetFlag(FLAGS_stability_pct) / 100.0,
                    .use_p99 = absl::GetFlag(FLAGS_stability_latency) == "p99"},
      .channels = absl::GetFlag(FLAGS_channels),
      .answer_bytes_per_stream_s = AnswerBytesPerStreamSecond(*config, model_states),
      .grpc_args = *grpc_args,
      .pacer_threads = absl::GetFlag(FLAGS_pacer_threads),
      .stream_api = stream_api == "cq" ? StreamApi::kCompletionQueue : StreamApi::kCallback,
      .cq_threads = absl::GetFlag(FLAGS_cq_threads),
      .late_ms = absl::GetFlag(FLAGS_late_ms),
      .slo_ms = absl::GetFlag(FLAGS_slo_ms),
      .drain_s = absl::GetFlag(FLAGS_drain_s),
      .audio = audio.get(),
      .samples_per_frame = absl::GetFlag(FLAGS_audio_sample_rate) / 100};
  LoadRunner runner(options, features.get(), verifier.get());

  LoadReport report;
  report.run = {.server = server,
                .models = absl::StrJoin(models, ","),
                .device = device,
                .features = audio != nullptr ? absl::StrCat("audio: ", audio->description())
                                             : features->description(),
                .realtime = options.realtime,
                .chunk_frames = options.chunk_frames,
                .duration_s = options.chunks > 0 ? 0 : options.duration_s,
                .chunks = options.chunks,
                .slo_ms = options.slo_ms,
                .verify_fraction = verify_fraction,
                .date = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()),
                .command_line = command_line};
  std::printf("gmmscore-load: %s on %s (%s), %d dims; features %s\n", report.run.models.c_str(),
              server.c_str(), device.c_str(), dim, report.run.features.c_str());
  std::fflush(stdout);

  auto on_point = [&](const PointResult& point) {
    report.points.push_back(point);
    std::printf("%s", FormatPoint(point, options.slo_ms).c_str());
    std::fflush(stdout);
  };
  bool verification_failed = false;
  if (absl::GetFlag(FLAGS_search)) {
    absl::StatusOr<CapacitySearch> search =
        SearchCapacity(runner, counts->front(), absl::GetFlag(FLAGS_search_max),
                       absl::GetFlag(FLAGS_search_resolution), on_point);
    if (!search.ok()) return Fail(search.status());
    report.search = *search;
    const std::string bound = search->first_failing > 0
                                  ? absl::StrFormat("%d failed", search->first_failing)
                                  : std::string("the search maximum passed");
    std::printf("capacity: %d streams within p99 <= %.1f ms (%s)\n", search->best,
                options.slo_ms, bound.c_str());
  } else {
    for (int n : *counts) {
      absl::StatusOr<PointResult> point = runner.Run(n);
      if (!point.ok()) return Fail(point.status());
      on_point(*point);
    }
  }
  for (const PointResult& p : report.points) {
    if (p.verify.has_value() && p.verify->mismatched > 0) verification_failed = true;
  }

  const std::vector<std::pair<std::string, std::string>> outputs = {
      {absl::GetFlag(FLAGS_json), ReportJson(report)},
      {absl::GetFlag(FLAGS_csv), ReportCsv(report)},
      {absl::GetFlag(FLAGS_plot), CapacityPlotSvg(report)}};
  for (const auto& [path, contents] : outputs) {
    if (path.empty()) continue;
    absl::Status written = WriteFile(path, contents);
    if (!written.ok()) return Fail(written);
  }
  if (verification_failed) {
    std::fprintf(stderr, "gmmscore-load: verification found wrong answers (see above)\n");
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace gmmscore::load

int main(int argc, char** argv) { return gmmscore::load::Main(argc, argv); }
