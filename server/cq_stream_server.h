// CqStreamServer: serves StreamScore on gRPC's completion-queue API, the
// shape gRPC's performance guide recommends for high message rates: several
// server completion queues, each drained by one thread of ours, every call
// staying on the queue that accepted it. Calls are spread over the queues by
// where their requests are kept open: gRPC offers a new call to its
// connection's queue first, then the next queues in turn, and each accept
// re-arms one request on the queue with the fewest calls plus open requests.
// So while streams open, the busiest queue exceeds the mean by at most the
// requests a queue starts with, plus one, however gRPC ties connections to
// queues (before, one connection's streams could all land on one queue). The
// least busy can trail by up to all the open requests.
//
// A call's reactions (read, write, finish, done) run on its queue's thread
// and go to the call's StreamScoreSession through StreamCall, exactly as
// the callback API's would; writes are started from whichever thread has
// the answer ready.
//
// Why: on Debian's gRPC 1.51 the callback API funnels every completion of
// every call through one shared queue, and gmmscored's StreamScore stopped at
// ~18k answers a second however small the answers (docs/PERFORMANCE.md,
// "What limits (a)").
//
//   ScorerService service(...);  // built with StreamApi::kCompletionQueue
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);
//   CqStreamServer streams(&builder, &service, /*threads=*/8);
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
//   streams.Start();
//   ...
//   server->Shutdown(deadline);  // calls end (cancelled past the deadline)
//   streams.Stop();              // waits for them, then stops the queues
//
// Thread safety: Start and Stop from one thread, in that order; Stop also
// without Start (a server that did not build).
#ifndef GMMSCORE_SERVER_CQ_STREAM_SERVER_H_
#define GMMSCORE_SERVER_CQ_STREAM_SERVER_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_builder.h"
#include "server/scorer_service.h"

namespace gmmscore {

class CqStreamServer {
 public:
  // Adds `threads` (>= 1) completion queues to `builder`; call before
  // BuildAndStart. `service` must be registered with the builder, serve
  // StreamScore on the completion-queue API, and outlive this object.
  CqStreamServer(grpc::ServerBuilder* builder, ScorerService* service, int threads);
  // Stop() unless stopped.
  ~CqStreamServer();

  CqStreamServer(const CqStreamServer&) = delete;
  CqStreamServer& operator=(const CqStreamServer&) = delete;

  // After BuildAndStart: asks gRPC for calls on every queue and starts the
  // queue threads (named gs-stream-cq).
  void Start();
  // After the server's Shutdown: waits until every call has ended (Shutdown
  // cancels those left at its deadline), then shuts the queues down and
  // joins their threads. Idempotent.
  void Stop();

  int threads() const { return static_cast<int>(queues_.size()); }
  // Accepted calls not yet ended, by queue.
  std::vector<int64_t> CallsPerQueue() const;

 private:
  class Call;
  friend class Call;
  // A queue's calls: `alive` (accepted or waiting to be, not yet deleted)
  // counts its open requests too, and is what placement balances.
  struct QueueCalls {
    int64_t alive = 0;
    int64_t accepted = 0;
  };

  // Asks gRPC for the next StreamScore call, on the lightest queue.
  void RequestCall();
  int LightestQueue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CallAccepted(int queue);
  void CallDeleted(int queue, bool accepted);
  static void DrainQueue(grpc::ServerCompletionQueue* cq);

  ScorerService* const service_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;

  mutable absl::Mutex mu_;
  // By queue; Stop waits until none is alive.
  std::vector<QueueCalls> queue_calls_ ABSL_GUARDED_BY(mu_);
  int last_chosen_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_CQ_STREAM_SERVER_H_
