// ScorerService: the gmmscore.v1.AcousticScorer service. ListModels answers
// from the repository; Score and StreamScore send their frames through the
// shared BatchScheduler, so unary requests and live streams are batched
// together; Align sends its utterance through the AlignScheduler, which
// aligns the requests waiting for one model as one batch. The unary methods run on gRPC's callback API; StreamScore, which
// carries nearly every message, on the completion-queue API by default
// (served by a CqStreamServer, cq_stream_server.h) or on the callback API.
//
//   ScorerService service(repository.get(), scheduler.get(), {}, StreamApi::kCallback);
//   builder.RegisterService(&service);
//   ...
//   service.Drain();  // live streams answer what they accepted, then UNAVAILABLE
//
// Every RPC is refused with UNAUTHENTICATED when limits.required_token is
// set and the call does not carry it. Score, StreamScore and Align jobs
// carry the RPC's deadline, and a cancelled RPC's queued jobs are dropped at
// once.
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_SCORER_SERVICE_H_
#define GMMSCORE_SERVER_SCORER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "gmmscore/v1/scorer.grpc.pb.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/async_stream.h"
#include "server/adaptation_hub.h"
#include "server/align_scheduler.h"
#include "server/answer_send_stats.h"
#include "server/batch_scheduler.h"
#include "server/device_router.h"
#include "server/idle_watchdog.h"
#include "server/model_repository.h"
#include "server/audio_stream_stats.h"
#include "server/stream_call.h"
#include "server/stream_registry.h"
#include "server/stream_score_session.h"

namespace gmmscore {

struct ServiceLimits {
  int64_t max_chunk_frames = 1000;     // frames in one stream chunk
  int max_chunks_in_flight = 8;        // per stream, accepted but unanswered
  int64_t max_streams = 4096;          // live StreamScore RPCs
  int64_t max_request_frames = 100000;  // frames in one Score request or Align utterance
  // A stream with nothing read or written for this long ends with
  // DEADLINE_EXCEEDED (it was idle); zero: never.
  absl::Duration stream_idle_timeout = absl::ZeroDuration();
  // A stream whose client has not taken an answer for this long (the write
  // is blocked: the client stopped reading) is cancelled; zero: never.
  absl::Duration stream_write_timeout = absl::ZeroDuration();
  // Unsent answers (accepted chunks' results until gRPC has taken them): a
  // stream stops reading while it holds max_stream_answer_bytes, a chunk
  // whose answer alone is larger is refused, and a chunk that would take
  // the server past max_answer_memory_bytes ends its stream; both
  // RESOURCE_EXHAUSTED.
  int64_t max_stream_answer_bytes = int64_t{256} << 20;
  int64_t max_answer_memory_bytes = int64_t{4096} << 20;
  // Largest message the server sends: a Score answer beyond it is refused
  // before any work (RESOURCE_EXHAUSTED). Set from the daemon's message limit.
  int64_t max_answer_bytes = int64_t{256} << 20;
  // Bearer token every AcousticScorer RPC must carry ("authorization:
  // Bearer <token>"); empty: none. Never logged.
  std::string required_token;
};

// Which gRPC API carries StreamScore.
enum class StreamApi {
  // Completion queues drained by threads of gmmscored's own (CqStreamServer):
  // the faster at many thousand messages a second (docs/PERFORMANCE.md).
  kCompletionQueue,
  // gRPC's callback reactors, on the library's shared threads.
  kCallback,
};

// "cq" or "callback"; INVALID_ARGUMENT otherwise.
absl::StatusOr<StreamApi> ParseStreamApi(absl::string_view name);

// The unary methods on the callback API. The constructor marks Score and
// Align (callback, decoding their requests themselves: decoded_message.h)
// and StreamScore (callback or async).
using ScorerServiceBase = v1::AcousticScorer::WithCallbackMethod_ListModels<
    v1::AcousticScorer::WithCallbackMethod_GetServerStats<
        v1::AcousticScorer::WithCallbackMethod_GetAdaptation<v1::AcousticScorer::Service>>>;

class ScorerService final : public ScorerServiceBase {
 public:
  using StreamScoreReaderWriter =
      grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, StreamRequestIn>;

  // `repository`, `scheduler` and `aligner` must outlive the service and
  // every RPC. With StreamApi::kCompletionQueue the server needs a
  // CqStreamServer. Without an `aligner`, Align answers UNIMPLEMENTED;
  // without `adaptation` (which must outlive every stream), streams asking
  // for it are refused (FAILED_PRECONDITION) and GetAdaptation is
  // UNIMPLEMENTED.
  ScorerService(const ModelRepository* repository, BatchScheduler* scheduler,
                const ServiceLimits& limits, StreamApi stream_api,
                AlignScheduler* aligner = nullptr, AdaptationHub* adaptation = nullptr);
  // With one scheduler per device of `repository` (router->scheduler(d)
  // scores its replicas on device d); `router` must outlive the service.
  // Streams and requests go to the least-loaded device holding their models
  // (device_router.h); FAILED_PRECONDITION when no device holds them all.
  ScorerService(const ModelRepository* repository, DeviceRouter* router,
                const ServiceLimits& limits, StreamApi stream_api,
                AlignScheduler* aligner = nullptr, AdaptationHub* adaptation = nullptr);

  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  // INVALID_ARGUMENT when the request's bytes did not decode.
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* context,
                                  const DecodedMessage<v1::ScoreRequest>* request,
                                  v1::ScoreResponse* response);
  grpc::ServerUnaryReactor* GetServerStats(grpc::CallbackServerContext* context,
                                           const v1::GetServerStatsRequest* request,
                                           v1::GetServerStatsResponse* response) override;
  // NOT_FOUND when nothing was published under the name.
  grpc::ServerUnaryReactor* GetAdaptation(grpc::CallbackServerContext* context,
                                          const v1::GetAdaptationRequest* request,
                                          v1::GetAdaptationResponse* response) override;
  // The request checked here (align_request.h: NOT_FOUND, FAILED_PRECONDITION,
  // INVALID_ARGUMENT, OUT_OF_RANGE), then aligned in the align queue
  // (RESOURCE_EXHAUSTED when it is full); INVALID_ARGUMENT when the
  // request's bytes did not decode.
  grpc::ServerUnaryReactor* Align(grpc::CallbackServerContext* context,
                                  const DecodedMessage<v1::AlignRequest>* request,
                                  v1::AlignResponse* response);

  // New streams are refused with UNAVAILABLE; live ones stop reading, answer
  // what they accepted and end with UNAVAILABLE. The idle watchdog stops.
  void Drain();

  int64_t live_streams() const { return registry_.live_streams(); }
  StreamRegistry::Connections stream_connections() const { return registry_.connections(); }
  // What audio streams' front ends did (GetServerStats, /metrics).
  AudioCounters audio_counters() const { return audio_stats_.totals(); }
  // Bytes of stream answers computed and not yet taken by their clients;
  // chunks refused because all of them together were at the limit; streams
  // cancelled because their client stopped reading (stream_write_timeout).
  int64_t unsent_answer_bytes() const { return answer_budget_.held(); }
  int64_t answer_memory_refusals() const { return answer_budget_.refusals(); }
  // Chunks that waited for answer memory while their stream's earlier
  // answers were taken (StreamScoreSession, "answer memory").
  int64_t answer_memory_waits() const { return answer_memory_waits_.load(); }
  int64_t stalled_streams() const { return stalled_streams_.load(); }
  // Stream sessions not yet deleted (a stream's session outlives its RPC
  // until its last scheduler job returns).
  int64_t sessions_alive() const { return sessions_alive_.load(); }

  // StreamScore on the completion-queue API (for CqStreamServer): asks gRPC
  // for the next call on `cq` (`tag` comes back when it arrives) ...
  void RequestStream(grpc::ServerContext* context, StreamScoreReaderWriter* stream,
                     grpc::ServerCompletionQueue* cq, void* tag);
  // ... and starts its session on `call` once it has (either API): checks
  // the token, registers the stream and starts reading, or refuses it.
  void StartStream(const grpc::ServerContextBase& context, StreamCall* call);

 private:
  // OK, or UNAUTHENTICATED when a required token is missing or wrong.
  absl::Status CheckToken(const grpc::ServerContextBase& context) const;

  ScorerService(const ModelRepository* repository, std::unique_ptr<DeviceRouter> own_router,
                const ServiceLimits& limits, StreamApi stream_api, AlignScheduler* aligner,
                AdaptationHub* adaptation, DeviceRouter* router);

  const ModelRepository* const repository_;
  const std::unique_ptr<DeviceRouter> own_router_;  // the one-scheduler constructor's
  DeviceRouter* const router_;
  AlignScheduler* const aligner_;  // null: Align is UNIMPLEMENTED
  AdaptationHub* const adaptation_;  // null: no live adaptation
  const ServiceLimits limits_;
  StreamRegistry registry_;
  AnswerBudget answer_budget_;  // before the watchdog and every stream
  StreamIdleWatchdog idle_watchdog_;  // after registry_: stops before it goes
  std::atomic<int64_t> sessions_alive_{0};
  std::atomic<int64_t> stalled_streams_{0};
  std::atomic<int64_t> answer_memory_waits_{0};
  AnswerSendStats answer_send_stats_;
  AudioStreamStats audio_stats_;
  std::atomic<int64_t> streams_started_{0};
  const absl::Time start_time_ = absl::Now();
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SCORER_SERVICE_H_
