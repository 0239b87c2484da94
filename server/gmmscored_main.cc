// gmmscored: the GMM acoustic-likelihood scoring daemon (gRPC service
// gmmscore.v1.AcousticScorer, proto/gmmscore/v1/scorer.proto).
//
//   gmmscored --model_repository /srv/models --listen 0.0.0.0:50051 --backend auto
//
// Flags around Daemon (daemon.h); SIGTERM or SIGINT drains and exits 0.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage_config.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "kernels/core/mutex_mode.h"
#include "kernels/core/status_macros.h"
#include "kernels/backends/align_engine_factory.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/cpu/blas_core.h"
#include "server/auth_token.h"
#include "kernels/core/version.h"
#include "proto/grpc_args.h"
#include "server/daemon.h"
#include "server/device_list.h"
#include "server/log.h"
#include "server/server_config.h"

ABSL_FLAG(std::string, config, "",
          "A config file in protobuf text format (gmmscore.v1.ServerConfig, "
          "proto/gmmscore/v1/server_config.proto; example deploy/gmmscored.textproto). Each "
          "field sets the flag of its name; flags given on the command line override the file. "
          "Its `models` entries set per-model backend (must be this daemon's), precision (exact or fast), "
          "max_batch_frames, load_on_demand and dictionary (a Sphinx model's, for Align). A bad "
          "file stops the start, naming file, line and column.");
ABSL_FLAG(std::string, model_repository, "",
          "Directory of models to serve (required). Every regular file in it is one model, "
          "named by its file name without the extension (spk1.mdl -> 'spk1'), in any format "
          "gmmscore reads (native, Kaldi AmDiagGmm, HTK MMF; detected from the content); every "
          "subdirectory holding a CMU Sphinx continuous model is one too, named by the "
          "directory. All are loaded and prepared on the backend at start; names starting with "
          "'.' and other subdirectories are skipped.");
ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "HOST:PORT to serve on, without TLS. 0.0.0.0:PORT or [::]:PORT for all interfaces; "
          "port 0 picks a free port (logged). unix:/PATH: a unix socket, for clients on this "
          "host.");
ABSL_FLAG(std::string, backend, "auto",
          "Scoring backend: 'auto' (CUDA device 0 when a GPU is present, else CPU), 'cpu', "
          "'cuda' or 'cuda:N'. Results are the same on all of them.");
ABSL_FLAG(std::string, devices, "",
          "Devices to score on, each with its own batch scheduler and queue: 'all' (every GPU), "
          "'0,2' (those GPUs; '0,0' runs two schedulers over GPU 0; with --backend cpu, '0,1' "
          "runs two CPU backends). Empty: the one device of --backend. Streams go to the "
          "least-loaded device holding their models (the config's models[].devices places them).");
ABSL_FLAG(int64_t, max_batch_frames, 4096,
          "Batching: while the backend is busy, chunks from all streams gather until they hold "
          "this many frames (or --max_queue_delay_us passes); one dispatch scores at most this "
          "many frames in one backend call, one run per model.");
ABSL_FLAG(bool, warm_up, true,
          "Before serving a model, run batches of it of every size up to --max_batch_frames (or its "
          "config's max_batch_frames) through each GPU's streams, answered whole, as top_k 100, in "
          "float16, fused and as adapting streams' windows, so that no batch under load waits for buffers to grow or kernels to load. Takes "
          "about a second a model on an H200; a GPU that cannot hold a full batch fails the load.");
ABSL_FLAG(int64_t, max_queue_delay_us, 1000,
          "Batching: the longest a chunk waits for company while the backend is busy, in "
          "microseconds. When the backend is idle a chunk is dispatched at once.");
ABSL_FLAG(int32_t, scheduler_workers, 0,
          "Threads issuing backend calls, so that several dispatches are scored at once (on "
          "CUDA their copies and kernels overlap on separate streams). 0: 4 on a CUDA backend "
          "(its number of streams), 2 on the CPU (whose calls share one thread pool): the backend's "
          "concurrent_calls().");
ABSL_FLAG(int32_t, answer_threads, 0,
          "Threads that build answers (fusion, sparse selection, protobuf copies) from scored "
          "batches, beside the scheduler workers; 0: half the cores.");
ABSL_FLAG(int64_t, max_chunk_frames, 1000,
          "Most frames in one stream chunk; larger chunks end the stream with INVALID_ARGUMENT.");
ABSL_FLAG(int32_t, max_chunks_in_flight, 8,
          "Per stream: chunks accepted but not yet answered before the server stops reading "
          "(flow control pushes back on the client).");
ABSL_FLAG(int64_t, max_streams, 4096,
          "Most live StreamScore streams; more are refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_request_frames, 100000, "Most frames in one unary Score request.");
ABSL_FLAG(int64_t, max_queued_frames, 262144,
          "Backpressure: most frames waiting in the batch scheduler's queue (for the one "
          "backend/GPU). Chunks or requests beyond it wait up to --queue_full_wait_ms for room, "
          "then are refused with RESOURCE_EXHAUSTED (a stream ends after answering its earlier "
          "chunks) instead of queueing without bound.");
ABSL_FLAG(int64_t, queue_full_wait_ms, 1000,
          "A chunk or Score request that finds a device's scheduler queue full "
          "(--max_queued_frames) waits up to this many milliseconds for room, in arrival "
          "order, before it is refused with RESOURCE_EXHAUSTED (which ends a stream): a burst "
          "costs admitted streams latency, not their lives. New streams and requests are "
          "refused while any wait. 0: refused at once.");
ABSL_FLAG(int64_t, overload_queue_ms, 500,
          "Overload: while the oldest chunk in a device's scheduler queue has waited this many "
          "milliseconds, or the queue holds over half of --max_queued_frames, new streams and "
          "Score requests for that device are refused with RESOURCE_EXHAUSTED, so that the "
          "streams already admitted keep their pace while the queue drains. 0: never (neither "
          "rule; work waiting for room, --queue_full_wait_ms, still refuses them).");
ABSL_FLAG(int32_t, stream_idle_timeout_s, 300,
          "A StreamScore stream on which nothing was received or sent for this many seconds "
          "(and no chunk is being scored) is ended with DEADLINE_EXCEEDED, its message saying "
          "it was idle. 0: never.");
ABSL_FLAG(int32_t, stream_write_timeout_s, 60,
          "A stream whose client has not taken an answer for this many seconds (it stopped "
          "reading) is cancelled and its memory freed. 0: never.");
ABSL_FLAG(int64_t, stream_answer_memory_mb, 256,
          "MiB of computed, not yet sent answers one stream may hold: at this much it stops "
          "reading chunks until the client takes answers; a chunk whose results alone are "
          "larger is refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, answer_memory_mb, 4096,
          "MiB of computed, not yet sent answers all streams together may hold; a chunk beyond "
          "it ends its stream with RESOURCE_EXHAUSTED. Keep it well below the process's "
          "memory limit. 0: no limit.");
ABSL_FLAG(int64_t, pinned_scores_mb, 1024,
          "Page-locked host MiB per scheduled GPU (--devices 0,0 has two) that dense scores "
          "(float32, and float16 encoded on the GPU) are copied into from the GPU and answered "
          "from, with no host copy of them; past it, scores are copied as before. Made at start. "
          "0: always copy.");
ABSL_FLAG(int32_t, malloc_trim_s, 10,
          "Every this many seconds, give memory that malloc holds free (at least 256 MiB, e.g. "
          "after a burst of answers) back to the OS once the load has fallen (a trim stalls "
          "answers), so that RSS follows use. 0: never.");
ABSL_FLAG(int32_t, max_message_mb, 256, "Largest gRPC message accepted or sent, MiB.");
ABSL_FLAG(std::string, stream_api, "cq",
          "The gRPC API that carries StreamScore: 'cq' (completion queues, each drained by a "
          "thread of gmmscored's: --stream_threads) or 'callback' (gRPC's callback reactors on "
          "the library's shared threads). cq sends more answers a second "
          "(docs/PERFORMANCE.md).");
ABSL_FLAG(int32_t, stream_threads, 0,
          "With --stream_api cq: completion queues serving StreamScore, one thread each; 0: "
          "one per core, at least 2.");
ABSL_FLAG(int32_t, max_connection_age_s, 0,
          "Send GOAWAY to a client connection this many seconds old (gRPC adds +-10% jitter), "
          "so that long-lived clients reconnect and spread over replicas added since; 0: "
          "never. Behind a proxy that pools connections (Envoy), set it on the proxy too.");
ABSL_FLAG(int32_t, max_connection_age_grace_s, 30,
          "With --max_connection_age_s: seconds a closing connection's RPCs (streams) have to "
          "finish before they are cancelled.");
ABSL_FLAG(std::vector<std::string>, grpc_arg, {},
          "gRPC arguments of every client connection, NAME=VALUE, comma-separated, given once (a "
          "second --grpc_arg replaces the first), e.g. grpc.http2.max_frame_size=1048576: HTTP/2 "
          "windows and frame sizes. Those gmmscored sets from its own flags (message sizes, "
          "connection age) are refused. gRPC ignores names it does not know.");
ABSL_FLAG(int32_t, drain_timeout_s, 10,
          "On SIGTERM/SIGINT: seconds to let RPCs in flight finish before they are cancelled.");
// Operations (docs/OPERATIONS.md).
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT serving Prometheus metrics at GET /metrics (names start with gmmscore_); "
          "empty: none.");
ABSL_FLAG(int32_t, drain_grace_s, 0,
          "On SIGTERM/SIGINT: seconds to report NOT_SERVING on grpc.health.v1 while still "
          "accepting RPCs (so load balancers stop sending new streams), before draining.");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key, serve over TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; with TLS, require client certificates signed by it (mutual TLS).");
ABSL_FLAG(std::string, admin_token_file, "",
          "File holding the bearer token the gmmscore.v1.ModelAdmin service requires "
          "('authorization: Bearer <token>'); empty: no token (keep the port private). The "
          "token is never logged.");
ABSL_FLAG(bool, admin_open, false,
          "With --scoring_token_file but no --admin_token_file, leave gmmscore.v1.ModelAdmin "
          "open to anyone who reaches the port (by default it is then closed: "
          "PERMISSION_DENIED). Logged as a warning at start-up.");
ABSL_FLAG(std::string, scoring_token_file, "",
          "File holding a bearer token every gmmscore.v1.AcousticScorer RPC (streams, Score, "
          "ListModels, GetServerStats) must carry ('authorization: Bearer <token>'); missing "
          "or wrong: UNAUTHENTICATED. May be the --admin_token_file. grpc.health.v1 and "
          "reflection stay open (probes). Empty: none. The token is never logged.");
// Forced alignment (the Align RPC).
ABSL_FLAG(std::string, align_dictionary, "",
          "Pronunciation dictionary (cmudict format) of every CMU Sphinx model directory in the "
          "repository whose config entry names none (ModelConfig.dictionary): such models serve "
          "Align. Empty: only models with their own dictionary align.");
ABSL_FLAG(int32_t, align_max_batch, 16, "Align: most utterances of one model aligned in one batch.");
ABSL_FLAG(int64_t, align_queue_delay_us, 2000,
          "Align: the longest a request waits for others of its model before its batch starts, "
          "in microseconds (while the model's aligner is busy, requests wait for it anyway).");
ABSL_FLAG(int64_t, max_align_queued_frames, 262144,
          "Align: most frames (sent, or audio at the model's frame rate) waiting in the align "
          "queue; more: RESOURCE_EXHAUSTED at once.");
ABSL_FLAG(int32_t, align_workers, 0,
          "Align: threads running batches (one aligner's batches run one at a time; more workers "
          "align on several models or devices at once); 0: one per device of --devices.");
ABSL_FLAG(int32_t, align_threads, 0,
          "Align: threads of each aligner's graph building and Viterbi; 0: all cores.");
ABSL_FLAG(int32_t, adaptation_workers, 2,
          "Live adaptation (StreamConfig.adaptation): threads gathering the adapting streams' "
          "statistics and estimating their updates, off the scoring path.");
ABSL_FLAG(bool, adaptation_gather_on_device, true,
          "Live fMLLR adaptation: gather each stream's statistics on the GPU, in the same call "
          "that scores its chunks, so that the adaptation workers only estimate; false: the "
          "workers gather them from the answered frames and scores (as always on the CPU backend).");
ABSL_FLAG(int64_t, adaptation_backlog_frames, 6000,
          "Live adaptation: answered frames one stream may have waiting for the workers; beyond "
          "it chunks are left out of its statistics (counted in its answers' skipped_frames).");
ABSL_FLAG(int32_t, max_saved_adaptations, 1024,
          "Live adaptation: names GetAdaptation remembers (AdaptationConfig.save_as); the oldest "
          "is forgotten beyond it.");
ABSL_FLAG(int64_t, model_memory_budget_mb, 0,
          "Resident MiB all model versions together may hold on each device (device memory on a "
          "GPU; schedulers over one GPU, --devices 0,0, share it); a ModelAdmin load beyond it is "
          "refused with RESOURCE_EXHAUSTED. 0: no budget.");

ABSL_FLAG(bool, strict_config, false,
          "Stop (instead of warning) when a --config models entry names no model in the repository.");

namespace gmmscore {
namespace {

// --pinned_scores_mb is made at start on each of `schedulers` CUDA
// backends: refuse what would pin more than half the host's memory (the
// kernel would run out of memory, or kill the daemon, instead of refusing).
absl::Status CheckPinnedScores(int64_t mb, size_t schedulers) {
  if (mb < 0 || mb > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError("--pinned_scores_mb takes 0 (always copy) to 2^30");
  }
  const int64_t host_mb = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) >> 20;
  const int64_t total_mb = mb * static_cast<int64_t>(schedulers);
  if (host_mb > 0 && total_mb > host_mb / 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--pinned_scores_mb %d on %d scheduled GPUs would page-lock %d MiB at start, over half of this "
        "host's %d MiB",
        mb, schedulers, total_mb, host_mb));
  }
  return absl::OkStatus();
}

// A CUDA backend pins whole blocks (8 MiB) at start: fewer than asked means
// the host refused the rest, and scores past them are copied.
void WarnOnUnpinnedScores(const std::vector<std::unique_ptr<ScoringBackend>>& backends, int64_t mb) {
  for (const std::unique_ptr<ScoringBackend>& b : backends) {
    const int64_t pinned_mb = b->pinned_scores().held_bytes >> 20;
    if (absl::StartsWith(b->name(), "cuda") && pinned_mb + 8 <= mb) {
      LogWarning("%s: %d of --pinned_scores_mb %d MiB could be page-locked; past them scores are copied",
                 b->name(), pinned_mb, mb);
    }
  }
}

// `config`: the --config file's content (empty without one); its scalar
// fields are already in the flags.
absl::StatusOr<std::unique_ptr<Daemon>> StartFromFlags(const v1::ServerConfig& config) {
  const std::string dir = absl::GetFlag(FLAGS_model_repository);
  if (dir.empty()) {
    return absl::InvalidArgumentError("--model_repository is required (see --help)");
  }
  // Counting GPUs starts the CUDA runtime: only when --devices asks for it.
  const std::string device_flag = absl::GetFlag(FLAGS_devices);
  absl::StatusOr<DeviceList> devices = ParseDeviceList(
      device_flag, absl::GetFlag(FLAGS_backend), device_flag.empty() ? 0 : CudaDevicesPresent());
  if (!devices.ok()) return devices.status();
  const int64_t pinned_scores_mb = absl::GetFlag(FLAGS_pinned_scores_mb);
  // CPU backends pin nothing ("auto" may be a GPU).
  const auto cpu_backends = std::count(devices->backends.begin(), devices->backends.end(), "cpu");
  GMM_RETURN_IF_ERROR(CheckPinnedScores(pinned_scores_mb, devices->backends.size() - cpu_backends));
  std::vector<std::unique_ptr<ScoringBackend>> backends;
  std::vector<ScoringBackend*> backend_pointers;
  for (std::string& name : devices->backends) {
    absl::StatusOr<std::unique_ptr<ScoringBackend>> backend =
        CreateBackend(name, {.cuda_pinned_scores_bytes = pinned_scores_mb << 20,
                             .cuda_pinned_scores_at_start = true});
    if (!backend.ok()) return backend.status();
    name = (*backend)->name();  // "auto" resolved
    backend_pointers.push_back(backend->get());
    backends.push_back(*std::move(backend));
  }
  const std::unique_ptr<ScoringBackend>& backend = backends.front();
  LogInfo("backend%s: %s", backends.size() > 1 ? "s" : "", absl::StrJoin(devices->backends, ", "));
  WarnOnUnpinnedScores(backends, pinned_scores_mb);

  RepositoryOptions repository_options{
      .memory_budget_bytes = absl::GetFlag(FLAGS_model_memory_budget_mb) << 20,
      // Schedulers over one GPU (--devices 0,0) share its budget.
      .memory_of = devices->ordinals,
      .warm_up_frames = absl::GetFlag(FLAGS_warm_up) ? absl::GetFlag(FLAGS_max_batch_frames) : 0};
  repository_options.align.default_dictionary = absl::GetFlag(FLAGS_align_dictionary);
  repository_options.align.aligner.threads = absl::GetFlag(FLAGS_align_threads);
  // Alignment scores and decodes where the daemon scores: on a GPU backend
  // the CUDA engine keeps a batch's scores on the device, each device's
  // aligners on their own.
  for (const std::unique_ptr<ScoringBackend>& device : backends) {
    absl::StatusOr<AlignEngineFactory> engine = AlignEngineFor(device->name());
    if (!engine.ok()) return engine.status();
    repository_options.align.device_engines.push_back(*std::move(engine));
  }
  if (absl::Status status = ApplyModelConfigs(config, *devices,
                                              absl::GetFlag(FLAGS_max_batch_frames),
                                              &repository_options);
      !status.ok()) {
    return status;
  }
  const std::set<std::string> available = ModelRepository::ModelNamesIn(dir);
  for (const std::string& name : UnmatchedModelConfigs(config, available)) {
    const std::string problem = absl::StrFormat(
        "config: models entry '%s' names no model in the repository %s (a typo? its settings apply to "
        "nothing)", name, dir);
    if (absl::GetFlag(FLAGS_strict_config)) return absl::InvalidArgumentError(problem + " (--strict_config)");
    LogWarning("%s", problem);
  }
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      ModelRepository::LoadDirectory(dir, backend_pointers, repository_options);
  if (!repository.ok()) return repository.status();
  for (const ServedModel& served : (*repository)->models()) {
    const PreparedModel& model = *served.prepared;
    std::vector<std::string> placed;
    for (int d : served.devices()) placed.push_back((*repository)->device_name(d));
    LogInfo("model '%s' from %s (%s): %d dims, %d states, %d Gaussians%s, %.1f MiB host, "
            "%.1f MiB on %s, loaded in %s",
            served.name, served.source, served.format, model.dim(), model.num_states(),
            model.gaussians_per_frame(), model.tied() ? " (tied: codebook Gaussians per frame)" : "",
            model.host_bytes() / 1048576.0,
            served.prepared->device_bytes() / 1048576.0, absl::StrJoin(placed, ", "),
            absl::FormatDuration(served.load_time));
    if (served.aligner != nullptr) {
      LogInfo("model '%s' aligns (Align) with dictionary %s", served.name, served.aligner->dictionary());
    }
  }

  DaemonOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.scheduler.max_batch_frames = absl::GetFlag(FLAGS_max_batch_frames);
  options.scheduler.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  options.scheduler.num_workers = absl::GetFlag(FLAGS_scheduler_workers);
  if (options.scheduler.num_workers == 0) {
    options.scheduler.num_workers = backend->concurrent_calls();
  }
  options.scheduler.num_answer_threads = absl::GetFlag(FLAGS_answer_threads);
  options.align.max_batch = absl::GetFlag(FLAGS_align_max_batch);
  options.align.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_align_queue_delay_us));
  options.align.max_queued_frames = absl::GetFlag(FLAGS_max_align_queued_frames);
  // Each device has its own aligners (a request goes to one device), so
  // one worker per device keeps them all aligning.
  const int align_workers = absl::GetFlag(FLAGS_align_workers);
  options.align.num_workers = align_workers == 0 ? static_cast<int>(backends.size()) : align_workers;
  options.adaptation.workers = absl::GetFlag(FLAGS_adaptation_workers);
  options.adaptation.max_backlog_frames = absl::GetFlag(FLAGS_adaptation_backlog_frames);
  options.adaptation.gather_on_device = absl::GetFlag(FLAGS_adaptation_gather_on_device);
  options.adaptation.max_saved = absl::GetFlag(FLAGS_max_saved_adaptations);
  options.limits.max_chunk_frames = absl::GetFlag(FLAGS_max_chunk_frames);
  options.limits.max_chunks_in_flight = absl::GetFlag(FLAGS_max_chunks_in_flight);
  options.limits.max_streams = absl::GetFlag(FLAGS_max_streams);
  options.limits.max_request_frames = absl::GetFlag(FLAGS_max_request_frames);
  options.limits.stream_idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_stream_idle_timeout_s));
  options.limits.stream_write_timeout =
      absl::Seconds(absl::GetFlag(FLAGS_stream_write_timeout_s));
  // MiB to bytes, the flags' range first (a shift past 2^63 is undefined).
  if (absl::GetFlag(FLAGS_stream_answer_memory_mb) > (int64_t{1} << 30) ||
      absl::GetFlag(FLAGS_answer_memory_mb) > (int64_t{1} << 30) ||
      absl::GetFlag(FLAGS_max_message_mb) > 2047) {  // gRPC's limits are int bytes
    return absl::InvalidArgumentError(
        "--stream_answer_memory_mb and --answer_memory_mb take at most 2^30, --max_message_mb "
        "at most 2047");
  }
  options.limits.max_stream_answer_bytes = absl::GetFlag(FLAGS_stream_answer_memory_mb) << 20;
  options.limits.max_answer_memory_bytes = absl::GetFlag(FLAGS_answer_memory_mb) << 20;
  options.scheduler.max_queued_frames = absl::GetFlag(FLAGS_max_queued_frames);
  options.scheduler.overload_wait = absl::Milliseconds(absl::GetFlag(FLAGS_overload_queue_ms));
  options.scheduler.full_queue_wait = absl::Milliseconds(absl::GetFlag(FLAGS_queue_full_wait_ms));
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) << 20;
  absl::StatusOr<StreamApi> stream_api = ParseStreamApi(absl::GetFlag(FLAGS_stream_api));
  if (!stream_api.ok()) return stream_api.status();
  options.stream_api = *stream_api;
  options.stream_threads = absl::GetFlag(FLAGS_stream_threads);
  options.max_connection_age = absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_s));
  options.max_connection_age_grace = absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_grace_s));
  absl::StatusOr<std::vector<GrpcArg>> grpc_args = ParseGrpcArgs(absl::GetFlag(FLAGS_grpc_arg));
  if (!grpc_args.ok()) return grpc_args.status();
  options.grpc_args = *std::move(grpc_args);
  options.ops.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.ops.drain_grace = absl::Seconds(absl::GetFlag(FLAGS_drain_grace_s));
  options.ops.admin_open = absl::GetFlag(FLAGS_admin_open);
  options.ops.trim.period = absl::Seconds(absl::GetFlag(FLAGS_malloc_trim_s));
  options.ops.tls = {.cert_file = absl::GetFlag(FLAGS_tls_cert),
                     .key_file = absl::GetFlag(FLAGS_tls_key),
                     .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca)};
  if (const std::string token_file = absl::GetFlag(FLAGS_admin_token_file); !token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    options.ops.admin_token = *std::move(token);
  }
  if (const std::string token_file = absl::GetFlag(FLAGS_scoring_token_file);
      !token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    options.limits.required_token = *std::move(token);
  }
  // Every other check is the options' own (ValidateDaemonOptions, in Start).
  return Daemon::Start(std::move(backends), *std::move(repository), options);
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  absl::SetProgramUsageMessage(
      "the GMM acoustic-likelihood scoring daemon (gRPC gmmscore.v1.AcousticScorer).\n\n"
      "  gmmscored --model_repository DIR --listen HOST:PORT [--backend auto|cpu|cuda]\n"
      "  gmmscored --config FILE [--flag=value ...]   (flags override the file)\n\n"
      "Serves every model file in DIR. Clients stream feature chunks (StreamScore) and get "
      "per-state log-likelihoods back, fused over several models if asked; chunks of all "
      "streams are batched into one backend call. Sphinx models with a dictionary also serve "
      "forced alignment (Align; --align_dictionary). SIGTERM/SIGINT: stop accepting, "
      "answer what is in flight, exit 0.");
  // The config file first, so that the command line parsed after it wins.
  v1::ServerConfig config;
  const std::string config_path = ConfigPathFromArgs(argc, argv);
  if (!config_path.empty()) {
    absl::StatusOr<v1::ServerConfig> read = ReadServerConfig(config_path);
    absl::Status status = read.ok() ? ApplyConfigToFlags(*read, config_path) : read.status();
    if (!status.ok()) {
      LogError("cannot start: %s", status.ToString());
      return 2;
    }
    config = *std::move(read);
  }
  absl::FlagsUsageConfig usage;
  usage.version_string = [] { return VersionLine("gmmscored") + "\n"; };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  if (!config_path.empty()) {
    LogInfo("config: %s (command-line flags override it)", config_path);
  }

  // Block the stop signals in every thread (gRPC's included, started below)
  // so that only sigwait() sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<std::unique_ptr<Daemon>> daemon = StartFromFlags(config);
  if (!daemon.ok()) {
    LogError("cannot start: %s", daemon.status().ToString());
    return 1;
  }
  LogInfo("listening on %s (%d models on %s; batches of <= %d frames, <= %d us queueing)",
          (*daemon)->address(), (*daemon)->repository().models().size(),
          (*daemon)->repository().device(), absl::GetFlag(FLAGS_max_batch_frames),
          absl::GetFlag(FLAGS_max_queue_delay_us));

  LogInfo("limits: max_streams %d, max_chunk_frames %d, max_chunks_in_flight %d, "
          "max_request_frames %d, max_queued_frames %d, queue_full_wait_ms %d, overload_queue_ms %d, "
          "max_message_mb %d, "
          "stream_idle_timeout_s %d, stream_write_timeout_s %d, stream_answer_memory_mb %d, "
          "answer_memory_mb %d, max_connection_age_s %d (+%d s grace); scoring token %s, "
          "admin token %s",
          absl::GetFlag(FLAGS_max_streams), absl::GetFlag(FLAGS_max_chunk_frames),
          absl::GetFlag(FLAGS_max_chunks_in_flight), absl::GetFlag(FLAGS_max_request_frames),
          absl::GetFlag(FLAGS_max_queued_frames), absl::GetFlag(FLAGS_queue_full_wait_ms),
          absl::GetFlag(FLAGS_overload_queue_ms),
          absl::GetFlag(FLAGS_max_message_mb),
          absl::GetFlag(FLAGS_stream_idle_timeout_s), absl::GetFlag(FLAGS_stream_write_timeout_s),
          absl::GetFlag(FLAGS_stream_answer_memory_mb), absl::GetFlag(FLAGS_answer_memory_mb),
          absl::GetFlag(FLAGS_max_connection_age_s), absl::GetFlag(FLAGS_max_connection_age_grace_s),
          absl::GetFlag(FLAGS_scoring_token_file).empty() ? "off" : "required",
          !absl::GetFlag(FLAGS_admin_token_file).empty() ? "required"
          : absl::GetFlag(FLAGS_scoring_token_file).empty() || absl::GetFlag(FLAGS_admin_open)
              ? "off (ModelAdmin open)"
              : "none (ModelAdmin closed)");
  // CPU scoring, the CPU side of training and adaptation run on OpenBLAS.
  if (const std::string warning = BlasCoreWarning(); !warning.empty()) LogWarning("%s", warning);
  if (const int threads = (*daemon)->stream_threads(); threads > 0) {
    LogInfo("StreamScore: completion-queue API, %d queue threads", threads);
  } else {
    LogInfo("StreamScore: callback API");
  }
  if (const int port = (*daemon)->ops().metrics_port(); port > 0) {
    LogInfo("metrics: GET /metrics on port %d", port);
  }

  int signal = 0;
  sigwait(&stop_signals, &signal);
  LogInfo("%s: draining (up to %d s)", signal == SIGTERM ? "SIGTERM" : "SIGINT",
          absl::GetFlag(FLAGS_drain_timeout_s));
  (*daemon)->Drain(absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_s)));
  const BatchSchedulerStats stats = (*daemon)->scheduler_stats();
  LogInfo("stopped: %d chunks scored in %d backend calls (%d frames)", stats.jobs,
          stats.group_calls, stats.frames);
  return 0;
}

}  // namespace
}  // namespace gmmscore

int main(int argc, char** argv) { return gmmscore::Main(argc, argv); }
