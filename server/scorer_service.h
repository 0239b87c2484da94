// ScorerService: the gmmscore.v1.AcousticScorer service on the gRPC callback
// API. ListModels answers from the repository; Score and StreamScore send
// their frames through the shared BatchScheduler, so unary requests and live
// streams are batched together.
//
//   ScorerService service(repository.get(), scheduler.get(), {});
//   builder.RegisterService(&service);
//   ...
//   service.Drain();  // live streams answer what they accepted, then UNAVAILABLE
//
// Every RPC is refused with UNAUTHENTICATED when limits.required_token is
// set and the call does not carry it. Score and StreamScore jobs carry the
// RPC's deadline, and a cancelled RPC's queued jobs are dropped at once.
//
// Thread safety: all methods are thread-safe.
#ifndef GMMSCORE_SERVER_SCORER_SERVICE_H_
#define GMMSCORE_SERVER_SCORER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/time/time.h"

#include "gmmscore/v1/scorer.grpc.pb.h"
#include "server/answer_send_stats.h"
#include "server/batch_scheduler.h"
#include "server/idle_watchdog.h"
#include "server/model_repository.h"
#include "server/stream_reactor.h"
#include "server/stream_registry.h"

namespace gmmscore {

struct ServiceLimits {
  int64_t max_chunk_frames = 1000;     // frames in one stream chunk
  int max_chunks_in_flight = 8;        // per stream, accepted but unanswered
  int64_t max_streams = 4096;          // live StreamScore RPCs
  int64_t max_request_frames = 100000;  // frames in one Score request
  // A stream with nothing read or written for this long ends with
  // DEADLINE_EXCEEDED (it was idle); zero: never.
  absl::Duration stream_idle_timeout = absl::ZeroDuration();
  // Bearer token every AcousticScorer RPC must carry ("authorization:
  // Bearer <token>"); empty: none. Never logged.
  std::string required_token;
};

class ScorerService final : public v1::AcousticScorer::CallbackService {
 public:
  // `repository` and `scheduler` must outlive the service and every RPC.
  ScorerService(const ModelRepository* repository, BatchScheduler* scheduler,
                const ServiceLimits& limits);

  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* context,
                                  const v1::ScoreRequest* request,
                                  v1::ScoreResponse* response) override;
  grpc::ServerBidiReactor<v1::StreamScoreRequest, v1::StreamScoreResponse>* StreamScore(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetServerStats(grpc::CallbackServerContext* context,
                                           const v1::GetServerStatsRequest* request,
                                           v1::GetServerStatsResponse* response) override;

  // New streams are refused with UNAVAILABLE; live ones stop reading, answer
  // what they accepted and end with UNAVAILABLE. The idle watchdog stops.
  void Drain();

  int64_t live_streams() const { return registry_.live_streams(); }
  // Stream reactors not yet deleted (a stream's reactor outlives its RPC
  // until its last scheduler job returns).
  int64_t reactors_alive() const { return reactors_alive_.load(); }

 private:
  // OK, or UNAUTHENTICATED when a required token is missing or wrong.
  absl::Status CheckToken(const grpc::CallbackServerContext* context) const;

  const ModelRepository* const repository_;
  BatchScheduler* const scheduler_;
  const ServiceLimits limits_;
  StreamRegistry registry_;
  StreamIdleWatchdog idle_watchdog_;  // after registry_: stops before it goes
  std::atomic<int64_t> reactors_alive_{0};
  AnswerSendStats answer_send_stats_;
  std::atomic<int64_t> streams_started_{0};
  const absl::Time start_time_ = absl::Now();
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SCORER_SERVICE_H_
