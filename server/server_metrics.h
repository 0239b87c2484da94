// ServerMetrics: everything gmmscored exports at /metrics (prefix
// gmmscore_). RPC and message counts and end-to-end chunk latency come from
// a gRPC server interceptor (so no service code changes to count); batch
// shapes, queue wait and backend time from the scheduler's per-group report
// (and the align queue's per-batch report);
// gauges (streams, queue, model memory, backend) are read when scraped.
//
//   ServerMetrics metrics;
//   builder.experimental().SetInterceptorCreators(metrics.InterceptorFactories());
//   scheduler_options.on_group = [&](const GroupReport& r) { metrics.ObserveGroup(r); };
//   (Daemon::Start does this.)
//   std::string text = metrics.Render({.repository = ..., .service = ..., ...});
//
// The names and what each one means: docs/OPERATIONS.md.
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_SERVER_METRICS_H_
#define GMMSCORE_SERVER_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/support/server_interceptor.h"
#include "server/align_scheduler.h"
#include "server/batch_scheduler.h"
#include "server/cq_stream_server.h"
#include "server/device_router.h"
#include "server/gpu_monitor.h"
#include "server/metrics_exposition.h"
#include "server/model_repository.h"
#include "server/scorer_service.h"

namespace gmmscore {

// What is read at scrape time; any pointer may be null (left out).
struct MetricsSources {
  const ModelRepository* repository = nullptr;
  const ScorerService* service = nullptr;
  // The schedulers, one per device: totals, and gmmscore_device_* per device.
  const DeviceRouter* devices = nullptr;
  const AlignScheduler* aligner = nullptr;
  const AdaptationHub* adaptation = nullptr;  // null: no adaptation counters
  // StreamScore's completion queues (null with --stream_api callback):
  // the live calls on each, so that an operator sees whether they are even.
  const CqStreamServer* stream_queues = nullptr;
  std::string backend;  // "cpu", "cuda:0"
  // The scoring GPUs through NVML, one per distinct GPU; none on the CPU or
  // without NVML (then no gmmscore_gpu_* gauges).
  std::vector<const GpuMonitor*> gpus;
};

class ServerMetrics {
 public:
  ServerMetrics();

  // One factory counting every RPC of the server it is given to; the
  // factory refers to this object, which must outlive the server.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
  InterceptorFactories();

  // One backend call: its frames, its jobs (= stream chunks or unary
  // requests) and the streams they came from, how long each job waited in
  // the queue, how long the backend call took.
  void ObserveGroup(const GroupReport& report);
  // One Align call: its utterances, how long it took, each request's wait.
  void ObserveAlignBatch(const AlignBatchReport& report);

  std::string Render(const MetricsSources& sources) const;

  // For the interceptor and tests. Labels: {"grpc_service", "grpc_method"}
  // (+ "grpc_code" for requests).
  LabeledCounter requests;           // gmmscore_requests_total: RPCs ended, by status code
  LabeledCounter messages_received;  // gmmscore_messages_received_total
  LabeledCounter messages_sent;      // gmmscore_messages_sent_total
  LabeledCounter chunks_received;    // gmmscore_chunks_received_total (stream chunks, requests)
  LabeledCounter chunks_answered;    // gmmscore_chunks_answered_total
  Histogram chunk_latency;           // gmmscore_chunk_latency_seconds: receipt -> answer sent
  Histogram queue_wait;              // gmmscore_queue_wait_seconds
  Histogram score_time;              // gmmscore_backend_score_seconds (per backend call)
  Histogram batch_frames;            // gmmscore_batch_frames (per backend call)
  Histogram batch_jobs;              // gmmscore_batch_chunks (per backend call)
  Histogram batch_streams;           // gmmscore_batch_streams (per backend call)
  Histogram align_batch_utterances;  // gmmscore_align_batch_utterances (per Align call)
  Histogram align_batch_seconds;     // gmmscore_align_batch_seconds (per Align call)
  Histogram align_queue_wait;        // gmmscore_align_queue_wait_seconds (per request)
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SERVER_METRICS_H_
