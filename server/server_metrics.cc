#include "server/server_metrics.h"

#include <atomic>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/support/interceptor.h"
#include "kernels/core/version.h"
#include "server/server_stats.h"

namespace gmmscore {
namespace {

constexpr char kStreamScore[] = "/gmmscore.v1.AcousticScorer/StreamScore";
constexpr char kScore[] = "/gmmscore.v1.AcousticScorer/Score";

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

// "/pkg.Service/Method" -> {"pkg.Service", "Method"}.
MetricLabels MethodLabels(const char* full_method) {
  std::string method = full_method == nullptr ? "" : full_method;
  if (!method.empty() && method[0] == '/') method.erase(0, 1);
  const size_t slash = method.find('/');
  if (slash == std::string::npos) return {{"grpc_service", ""}, {"grpc_method", method}};
  return {{"grpc_service", method.substr(0, slash)}, {"grpc_method", method.substr(slash + 1)}};
}

// One per RPC. Scoring RPCs answer their chunks in order, so receipt times
// queue up and each answer sent takes the oldest. The method's counters are
// looked up once per RPC, on its first message each way, and counted
// without a lock: every message of every stream passes here.
class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(ServerMetrics* metrics, const char* method)
      : metrics_(metrics),
        labels_(MethodLabels(method)),
        stream_score_(method != nullptr && std::string(method) == kStreamScore),
        scoring_(stream_score_ || (method != nullptr && std::string(method) == kScore)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr) {
      Count(metrics_->messages_received, &messages_received_);
      // A stream's first message is its config, not a chunk.
      if (scoring_ && !(stream_score_ && received_ == 0)) {
        Count(metrics_->chunks_received, &chunks_received_);
        absl::MutexLock lock(&mu_);
        received_at_.push_back(absl::Now());
      }
      ++received_;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      Count(metrics_->messages_sent, &messages_sent_);
      if (scoring_) {
        absl::Time received = absl::InfinitePast();
        {
          absl::MutexLock lock(&mu_);
          if (!received_at_.empty()) {
            received = received_at_.front();
            received_at_.pop_front();
          }
        }
        Count(metrics_->chunks_answered, &chunks_answered_);
        if (received != absl::InfinitePast()) {
          metrics_->chunk_latency.Observe(absl::ToDoubleSeconds(absl::Now() - received));
        }
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      MetricLabels with_code = labels_;
      with_code.emplace_back("grpc_code", CodeName(methods->GetSendStatus().error_code()));
      metrics_->requests.Add(with_code);
    }
    methods->Proceed();
  }

 private:
  // Adds one to this RPC's series of `family`, found on first use (so a
  // method that never counts in a family makes no series there).
  void Count(LabeledCounter& family, std::atomic<int64_t>** cell) {
    if (*cell == nullptr) *cell = family.Cell(labels_);
    (*cell)->fetch_add(1, std::memory_order_relaxed);
  }

  ServerMetrics* const metrics_;
  const MetricLabels labels_;
  const bool stream_score_;
  const bool scoring_;
  // Receiving side: one message at a time, in order, so one thread at a time.
  int64_t received_ = 0;
  std::atomic<int64_t>* messages_received_ = nullptr;
  std::atomic<int64_t>* chunks_received_ = nullptr;
  // Sending side: likewise one message at a time.
  std::atomic<int64_t>* messages_sent_ = nullptr;
  std::atomic<int64_t>* chunks_answered_ = nullptr;
  absl::Mutex mu_;  // between the two sides
  std::deque<absl::Time> received_at_ ABSL_GUARDED_BY(mu_);
};

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(ServerMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(metrics_, info->method());
  }

 private:
  ServerMetrics* const metrics_;
};

void Gauge(MetricsWriter* out, const std::string& name, const std::string& help, double value) {
  out->Family(name, help, "gauge");
  out->Sample(name, {}, value);
}

void Counter(MetricsWriter* out, const std::string& name, const std::string& help, double value);

// Live adaptation (StreamConfig.adaptation), summed over its streams.
void WriteAdaptation(const AdaptationCounters& c, MetricsWriter* out) {
  Counter(out, "gmmscore_adaptation_streams_total", "Streams started with live adaptation.",
          static_cast<double>(c.streams));
  Gauge(out, "gmmscore_adaptation_live_streams", "Live streams that adapt.",
        static_cast<double>(c.live_streams));
  Counter(out, "gmmscore_adaptation_gathered_frames_total",
          "Answered frames whose adaptation statistics were gathered.",
          static_cast<double>(c.gathered_frames));
  Counter(out, "gmmscore_adaptation_device_gathered_frames_total",
          "Of those, frames whose fMLLR statistics the backend gathered on its device while "
          "scoring them (--adaptation_gather_on_device).",
          static_cast<double>(c.device_gathered_frames));
  Counter(out, "gmmscore_adaptation_skipped_frames_total",
          "Answered frames left out of adaptation because the workers fell behind "
          "(--adaptation_backlog_frames per stream), or gathered on a GPU whose sums could not "
          "be read after a fault (those are in gathered_frames too).",
          static_cast<double>(c.skipped_frames));
  Counter(out, "gmmscore_adaptation_updates_total", "Adaptation updates made current.",
          static_cast<double>(c.updates));
  Counter(out, "gmmscore_adaptation_failed_updates_total",
          "Adaptation updates that failed (the stream kept its version).",
          static_cast<double>(c.failed_updates));
  Counter(out, "gmmscore_adaptation_gather_seconds_total",
          "Worker time spent gathering adaptation statistics.", c.gather_us * 1e-6);
  Counter(out, "gmmscore_adaptation_update_seconds_total",
          "Worker time spent estimating updates (and preparing MAP models).", c.update_us * 1e-6);
}

void Counter(MetricsWriter* out, const std::string& name, const std::string& help, double value) {
  out->Family(name, help, "counter");
  out->Sample(name, {}, value);
}

// Device bytes of every replica of `model`.
double DeviceBytes(const ServedModel& model) {
  double bytes = 0;
  for (int d : model.devices()) bytes += static_cast<double>(model.replica(d)->device_bytes());
  return bytes;
}

// gmmscore_device_*: one sample per device's scheduler, labelled by its
// name and its index (a device given twice, --devices 0,0, has two).
void RenderDevices(const DeviceRouter& devices, const ModelRepository* repository, MetricsWriter* out) {
  struct Family {
    const char* name;
    const char* help;
    const char* type;
    std::function<double(int)> value;
  };
  const std::vector<DeviceCounters> counters = DeviceCountersOf(devices);
  std::vector<Family> families = {
      {"gmmscore_device_assigned_weight",
       "Streams and Score requests placed on the device now, each weighted by its model count.",
       "gauge", [&](int d) { return static_cast<double>(counters[d].load.assigned_weight); }},
      {"gmmscore_device_frames_scored_total", "Frames scored on the device.", "counter",
       [&](int d) { return static_cast<double>(counters[d].scheduler.frames); }},
      {"gmmscore_device_backend_seconds_total", "Backend Score time on the device, summed.", "counter",
       [&](int d) { return absl::ToDoubleSeconds(counters[d].scheduler.score_time); }},
      {"gmmscore_device_queued_frames", "Frames waiting in the device's queue.", "gauge",
       [&](int d) { return static_cast<double>(counters[d].scheduler.queued_frames); }},
      {"gmmscore_device_jobs_rejected_total",
       "Jobs refused because the device's queue was full (for --queue_full_wait_ms).",
       "counter", [&](int d) { return static_cast<double>(counters[d].scheduler.rejected_jobs); }},
      {"gmmscore_device_jobs_waited_total",
       "Jobs that found the device's queue full and waited for room (--queue_full_wait_ms).",
       "counter", [&](int d) { return static_cast<double>(counters[d].scheduler.waited_jobs); }},
      {"gmmscore_device_waiting_jobs", "Jobs waiting now for room in the device's full queue.",
       "gauge", [&](int d) { return static_cast<double>(counters[d].scheduler.waiting_jobs); }},
      {"gmmscore_device_overload_refusals_total",
       "New streams and requests refused because the device was overloaded (--overload_queue_ms, its queue over half full, or work waiting for room in it).",
       "counter", [&](int d) { return static_cast<double>(counters[d].scheduler.overload_refusals); }},
      {"gmmscore_device_failing",
       "1 while the device is failing (backend errors in a row; no new streams go to it), else 0.",
       "gauge", [&](int d) { return counters[d].health.failing ? 1.0 : 0.0; }},
      {"gmmscore_device_failed_calls_total",
       "Dispatches (and recovery probes) whose backend calls all failed with a device error.",
       "counter", [&](int d) { return static_cast<double>(counters[d].health.failed_dispatches); }},
      {"gmmscore_device_pinned_scores_bytes",
       "Page-locked host memory the device's backend keeps for dense scores answered without a host copy (--pinned_scores_mb).",
       "gauge", [&](int d) { return static_cast<double>(counters[d].pinned.held_bytes); }},
      {"gmmscore_device_pinned_scores_in_use_bytes",
       "Of gmmscore_device_pinned_scores_bytes, what scores not yet sent hold now.", "gauge",
       [&](int d) { return static_cast<double>(counters[d].pinned.in_use_bytes); }},
      {"gmmscore_device_pinned_scores_refusals_total",
       "Times a backend call found no free pinned block and copied scores instead (raise --pinned_scores_mb if it grows).",
       "counter", [&](int d) { return static_cast<double>(counters[d].pinned.refusals); }},
      {"gmmscore_device_stream_moves_total",
       "Streams and Score requests moved off the device to a healthy one after a device fault (scored there instead).",
       "counter", [&](int d) { return static_cast<double>(devices.moves_from(d)); }},
  };
  if (repository != nullptr && repository->num_devices() == devices.num_devices()) {
    families.push_back({"gmmscore_device_model_bytes",
                        "Bytes the device holds for models: served versions and replaced ones still used.",
                        "gauge", [repository](int d) {
                          const ModelRepository::MemoryUsage usage = repository->memory_on(d);
                          return static_cast<double>(usage.served_bytes + usage.retired_bytes);
                        }});
  }
  for (const Family& family : families) {
    out->Family(family.name, family.help, family.type);
    for (int d = 0; d < devices.num_devices(); ++d) {
      out->Sample(family.name, {{"device", devices.name(d)}, {"index", std::to_string(d)}}, family.value(d));
    }
  }
}

}  // namespace

ServerMetrics::ServerMetrics()
    : chunk_latency(Histogram::ExponentialBounds(0.00025, 2, 16)),  // 0.25 ms .. 8 s
      queue_wait(Histogram::ExponentialBounds(0.00005, 2, 16)),     // 50 us .. 1.6 s
      score_time(Histogram::ExponentialBounds(0.00005, 2, 16)),
      batch_frames(Histogram::ExponentialBounds(1, 2, 17)),  // 1 .. 65536 frames
      batch_jobs(Histogram::ExponentialBounds(1, 2, 13)),     // 1 .. 4096 chunks
      batch_streams(Histogram::ExponentialBounds(1, 2, 13)),
      align_batch_utterances(Histogram::ExponentialBounds(1, 2, 10)),  // 1 .. 512 utterances
      align_batch_seconds(Histogram::ExponentialBounds(0.001, 2, 16)),  // 1 ms .. 33 s
      align_queue_wait(Histogram::ExponentialBounds(0.0005, 2, 16)) {}  // 0.5 ms .. 16 s

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerMetrics::InterceptorFactories() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<MetricsInterceptorFactory>(this));
  return factories;
}

void ServerMetrics::ObserveGroup(const GroupReport& report) {
  batch_frames.Observe(static_cast<double>(report.frames));
  batch_jobs.Observe(static_cast<double>(report.jobs));
  batch_streams.Observe(static_cast<double>(report.origins));
  score_time.Observe(absl::ToDoubleSeconds(report.score_time));
  for (absl::Duration wait : report.queue_waits) queue_wait.Observe(absl::ToDoubleSeconds(wait));
}

void ServerMetrics::ObserveAlignBatch(const AlignBatchReport& report) {
  align_batch_utterances.Observe(static_cast<double>(report.utterances));
  align_batch_seconds.Observe(absl::ToDoubleSeconds(report.align_time));
  for (absl::Duration wait : report.queue_waits) align_queue_wait.Observe(absl::ToDoubleSeconds(wait));
}

std::string ServerMetrics::Render(const MetricsSources& sources) const {
  MetricsWriter out;
  // Which build answers (Prometheus' *_build_info convention: always 1).
  out.Family("gmmscore_build_info", "The gmmscored build: its version and backend.", "gauge");
  out.Sample("gmmscore_build_info", {{"version", GmmscoreVersion()}, {"backend", sources.backend}}, 1);
  out.Family("gmmscore_requests_total", "RPCs ended, by service, method and status code.",
             "counter");
  requests.WriteTo(&out, "gmmscore_requests_total");
  out.Family("gmmscore_messages_received_total", "Messages received, by service and method.",
             "counter");
  messages_received.WriteTo(&out, "gmmscore_messages_received_total");
  out.Family("gmmscore_messages_sent_total", "Messages sent, by service and method.", "counter");
  messages_sent.WriteTo(&out, "gmmscore_messages_sent_total");
  out.Family("gmmscore_chunks_received_total",
             "Frame chunks received (StreamScore chunks, Score requests).", "counter");
  chunks_received.WriteTo(&out, "gmmscore_chunks_received_total");
  out.Family("gmmscore_chunks_answered_total", "Frame chunks answered.", "counter");
  chunks_answered.WriteTo(&out, "gmmscore_chunks_answered_total");

  out.Family("gmmscore_chunk_latency_seconds",
             "End to end: a chunk received -> its answer handed to gRPC.", "histogram");
  chunk_latency.WriteTo(&out, "gmmscore_chunk_latency_seconds", {});
  out.Family("gmmscore_queue_wait_seconds",
             "A chunk's wait in the batch scheduler's queue (per model job).", "histogram");
  queue_wait.WriteTo(&out, "gmmscore_queue_wait_seconds", {});
  out.Family("gmmscore_backend_score_seconds",
             "Time of one backend Score call (one kernel launch sequence on CUDA).", "histogram");
  score_time.WriteTo(&out, "gmmscore_backend_score_seconds", {});
  out.Family("gmmscore_batch_frames", "Frames scored per backend call.", "histogram");
  batch_frames.WriteTo(&out, "gmmscore_batch_frames", {});
  out.Family("gmmscore_batch_chunks",
             "Chunks (stream chunks and requests) per backend call.", "histogram");
  batch_jobs.WriteTo(&out, "gmmscore_batch_chunks", {});
  out.Family("gmmscore_batch_streams",
             "Streams (and unary requests) whose chunks one backend call scored.", "histogram");
  batch_streams.WriteTo(&out, "gmmscore_batch_streams", {});

  if (sources.devices != nullptr) {
    const BatchSchedulerStats stats = sources.devices->TotalStats();
    int64_t max_queued_frames = 0;
    for (int d = 0; d < sources.devices->num_devices(); ++d) {
      max_queued_frames += sources.devices->scheduler(d)->options().max_queued_frames;
    }
    Counter(&out, "gmmscore_frames_scored_total", "Frames scored by the backend.",
            static_cast<double>(stats.frames));
    Counter(&out, "gmmscore_backend_calls_total", "Backend Score calls (batches x models).",
            static_cast<double>(stats.group_calls));
    Gauge(&out, "gmmscore_queued_jobs", "Jobs waiting in the batch scheduler's queue.",
          static_cast<double>(stats.queued_jobs));
    Gauge(&out, "gmmscore_running_backend_calls", "Backend Score calls running now.",
          static_cast<double>(stats.running_groups));
    Gauge(&out, "gmmscore_queued_frames", "Frames waiting in the batch scheduler's queue.",
          static_cast<double>(stats.queued_frames));
    Gauge(&out, "gmmscore_max_queued_frames",
          "The queues' bounds summed (--max_queued_frames per device: a device refuses work at its own).",
          static_cast<double>(max_queued_frames));
    Counter(&out, "gmmscore_jobs_rejected_total",
            "Jobs refused with RESOURCE_EXHAUSTED because the scheduler's queue was full.",
            static_cast<double>(stats.rejected_jobs));
    Counter(&out, "gmmscore_overload_refusals_total",
            "New streams and requests refused with RESOURCE_EXHAUSTED because a device was "
            "overloaded (its oldest queued chunk older than --overload_queue_ms, its queue over half full, or "
            "work waiting for room in it).",
            static_cast<double>(stats.overload_refusals));
    Counter(&out, "gmmscore_jobs_cancelled_total",
            "Queued jobs dropped unscored because their RPC was cancelled.",
            static_cast<double>(stats.cancelled_jobs));
    Counter(&out, "gmmscore_jobs_expired_total",
            "Queued jobs dropped unscored because their RPC's deadline had passed.",
            static_cast<double>(stats.expired_jobs));
    RenderDevices(*sources.devices, sources.repository, &out);
  }
  out.Family("gmmscore_align_batch_utterances", "Utterances aligned per Align call (batch).",
             "histogram");
  align_batch_utterances.WriteTo(&out, "gmmscore_align_batch_utterances", {});
  out.Family("gmmscore_align_batch_seconds",
             "Time of one Align call: graphs, senone scoring, Viterbi, segments of its batch.",
             "histogram");
  align_batch_seconds.WriteTo(&out, "gmmscore_align_batch_seconds", {});
  out.Family("gmmscore_align_queue_wait_seconds",
             "An Align request's wait in the align queue (for its model's aligner and company).",
             "histogram");
  align_queue_wait.WriteTo(&out, "gmmscore_align_queue_wait_seconds", {});
  if (sources.aligner != nullptr) {
    const AlignSchedulerStats stats = sources.aligner->stats();
    Counter(&out, "gmmscore_align_utterances_total", "Align requests aligned successfully.",
            static_cast<double>(stats.aligned));
    Counter(&out, "gmmscore_align_frames_total", "Frames of the utterances aligned successfully.",
            static_cast<double>(stats.frames_aligned));
    Counter(&out, "gmmscore_align_batches_total", "Align calls (batches of one model's requests).",
            static_cast<double>(stats.batches));
    Gauge(&out, "gmmscore_align_queued_requests", "Align requests waiting in the align queue.",
          static_cast<double>(stats.queued));
    Gauge(&out, "gmmscore_align_queued_frames", "Frames of the Align requests waiting.",
          static_cast<double>(stats.queued_frames));
    Counter(&out, "gmmscore_align_rejected_total",
            "Align requests refused with RESOURCE_EXHAUSTED because the align queue was full.",
            static_cast<double>(stats.rejected));
    Counter(&out, "gmmscore_align_cancelled_total",
            "Align requests dropped unaligned because their RPC was cancelled.",
            static_cast<double>(stats.cancelled));
    Counter(&out, "gmmscore_align_expired_total",
            "Align requests dropped unaligned because their deadline had passed.",
            static_cast<double>(stats.expired));
  }
  if (sources.adaptation != nullptr) WriteAdaptation(sources.adaptation->counters(), &out);
  if (sources.service != nullptr) {
    const AudioCounters audio = sources.service->audio_counters();
    Counter(&out, "gmmscore_audio_streams_total", "Audio streams (StreamConfig.audio) started.",
            static_cast<double>(audio.streams));
    Counter(&out, "gmmscore_audio_samples_total", "Audio samples received by audio streams.",
            static_cast<double>(audio.samples));
    Counter(&out, "gmmscore_audio_frames_total", "Feature frames computed by audio streams' front ends.",
            static_cast<double>(audio.frames));
    Counter(&out, "gmmscore_audio_front_end_seconds_total",
            "Time spent in audio streams' front ends (decoding, MFCC, CMN, dynamic features).",
            audio.front_end_us * 1e-6);
    Gauge(&out, "gmmscore_active_streams", "Live StreamScore streams.",
          static_cast<double>(sources.service->live_streams()));
    const StreamRegistry::Connections connections = sources.service->stream_connections();
    Gauge(&out, "gmmscore_stream_connections",
          "Client connections (peer addresses; a unix socket's clients count once) with live "
          "StreamScore streams. gRPC reads them one at a time: each busy one lengthens every "
          "chunk's way in (docs/OPERATIONS.md).",
          static_cast<double>(connections.connections));
    Gauge(&out, "gmmscore_stream_connection_streams_max",
          "Live StreamScore streams of the busiest client connection.",
          static_cast<double>(connections.most_streams));
    Gauge(&out, "gmmscore_unsent_answer_bytes",
          "Bytes of stream answers computed and not yet taken by their clients "
          "(bounded by --answer_memory_mb).",
          static_cast<double>(sources.service->unsent_answer_bytes()));
    Counter(&out, "gmmscore_answer_memory_refused_total",
            "Chunks refused with RESOURCE_EXHAUSTED because unsent answers were at "
            "--answer_memory_mb.",
            static_cast<double>(sources.service->answer_memory_refusals()));
    Counter(&out, "gmmscore_answer_memory_waits_total",
            "Chunks that found unsent answers at --answer_memory_mb and waited (reading paused) "
            "while their stream's earlier answers were taken.",
            static_cast<double>(sources.service->answer_memory_waits()));
    Counter(&out, "gmmscore_streams_stalled_total",
            "Streams cancelled because their client took no answer for --stream_write_timeout_s.",
            static_cast<double>(sources.service->stalled_streams()));
  }
  if (sources.stream_queues != nullptr) {
    out.Family("gmmscore_stream_queue_calls",
               "Live StreamScore calls on each of the daemon's completion queues (--stream_threads).",
               "gauge");
    const std::vector<int64_t> calls = sources.stream_queues->CallsPerQueue();
    for (size_t queue = 0; queue < calls.size(); ++queue) {
      out.Sample("gmmscore_stream_queue_calls", {{"queue", std::to_string(queue)}},
                 static_cast<double>(calls[queue]));
    }
  }
  if (sources.repository != nullptr) {
    const std::vector<ServedModel> models = sources.repository->models();
    out.Family("gmmscore_model_resident_bytes",
               "Bytes the backend holds for a served model (device bytes on a GPU, the host "
               "scoring form on the CPU).",
               "gauge");
    for (const ServedModel& model : models) {
      out.Sample("gmmscore_model_resident_bytes",
                 {{"model", model.name}, {"version", std::to_string(model.version)}},
                 static_cast<double>(model.resident_bytes()));
    }
    out.Family("gmmscore_model_device_bytes", "Device bytes of a served model (0 on the CPU).",
               "gauge");
    for (const ServedModel& model : models) {
      out.Sample("gmmscore_model_device_bytes",
                 {{"model", model.name}, {"version", std::to_string(model.version)}},
                 static_cast<double>(DeviceBytes(model)));
    }
    // What clients asked of each model (ModelUsage): where load goes.
    auto usage_counter = [&](const char* name, const char* help,
                             const std::atomic<int64_t> ModelUsage::*field) {
      out.Family(name, help, "counter");
      for (const ServedModel& model : models) {
        out.Sample(name, {{"model", model.name}, {"version", std::to_string(model.version)}},
                   static_cast<double>(((*model.usage).*field).load(std::memory_order_relaxed)));
      }
    };
    usage_counter("gmmscore_model_streams_total", "Streams opened naming a served model.",
                  &ModelUsage::streams);
    usage_counter("gmmscore_model_requests_total", "Score requests naming a served model.",
                  &ModelUsage::requests);
    usage_counter("gmmscore_model_frames_total",
                  "Frames sent to be scored with a served model (stream chunks and requests).",
                  &ModelUsage::frames);
    const ModelRepository::MemoryUsage memory = sources.repository->memory();
    Gauge(&out, "gmmscore_models_served", "Models served.", static_cast<double>(models.size()));
    Gauge(&out, "gmmscore_model_memory_bytes", "Resident bytes of all served models, all devices together (the budget is per device: gmmscore_device_model_bytes).",
          static_cast<double>(memory.served_bytes));
    Gauge(&out, "gmmscore_model_retired_bytes",
          "Resident bytes of replaced or unloaded versions still used by live streams.",
          static_cast<double>(memory.retired_bytes));
    Gauge(&out, "gmmscore_model_memory_budget_bytes", "The model memory budget of each device (0: none).",
          static_cast<double>(memory.budget_bytes));
  }
  if (!sources.gpus.empty()) {
    // Which GPU each is, to join with other exporters (DCGM labels by UUID)
    // and to follow a device across reboots; value always 1.
    out.Family("gmmscore_gpu_info", "A scoring GPU: index, UUID and name (NVML).", "gauge");
    for (const GpuMonitor* gpu : sources.gpus) {
      out.Sample("gmmscore_gpu_info",
                 {{"gpu", std::to_string(gpu->index())}, {"uuid", gpu->uuid()}, {"name", gpu->name()}}, 1);
    }
    // A failed read leaves that GPU's gauges out of this scrape rather than
    // reporting a made-up value.
    std::vector<std::pair<MetricLabels, GpuSample>> samples;
    for (const GpuMonitor* gpu : sources.gpus) {
      if (absl::StatusOr<GpuSample> now = gpu->Read(); now.ok()) {
        samples.push_back({{{"gpu", std::to_string(gpu->index())}}, *now});
      }
    }
    auto gauge = [&](const char* name, const char* help, auto value) {
      if (samples.empty()) return;
      out.Family(name, help, "gauge");
      for (const auto& [labels, sample] : samples) out.Sample(name, labels, value(sample));
    };
    gauge("gmmscore_gpu_memory_used_bytes", "Device memory in use on a scoring GPU (NVML).",
          [](const GpuSample& g) { return static_cast<double>(g.memory_used_bytes); });
    gauge("gmmscore_gpu_memory_total_bytes", "Device memory of a scoring GPU (NVML).",
          [](const GpuSample& g) { return static_cast<double>(g.memory_total_bytes); });
    gauge("gmmscore_gpu_utilization_ratio",
          "Share of NVML's last sample period in which a kernel ran on a scoring GPU.",
          [](const GpuSample& g) { return g.gpu_utilization_percent / 100.0; });
    gauge("gmmscore_gpu_memory_utilization_ratio",
          "Share of NVML's last sample period in which device memory was read or written.",
          [](const GpuSample& g) { return g.memory_utilization_percent / 100.0; });
  }
  out.Family("gmmscore_backend_info", "The scoring backend in use (value 1).", "gauge");
  out.Sample("gmmscore_backend_info", {{"backend", sources.backend}}, 1);
  return out.Take();
}

}  // namespace gmmscore
