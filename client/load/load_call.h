// LoadCall: the StreamScore RPC under one LoadStream, whichever gRPC API
// carries it: the callback API's reactor (NewCallbackLoadCall) or a
// completion queue drained by a thread of gmmscore-load's (LoadQueues,
// NewCqLoadCall). The stream says what to send and read through LoadCall and
// hears back through LoadCallEvents, with the callback API's rules on both
// sides:
//   - Start once, first: it writes `first` and reads into `answer`;
//   - at most one Write (WritesDone counts as one) and one Read in flight,
//     each message alive until its completion;
//   - OnWriteDone/OnReadDone(false): that direction is over;
//   - OnDone last and once, after every op has completed, the status is in
//     and every AddHold has had its RemoveHold; the carrier touches nothing of
//     its own after calling it, so the stream that owns it may be destroyed
//     once it hears;
//   - Cancel from any thread until OnDone: the call ends CANCELLED unless it
//     has ended already.
// On a completion queue the events of one call never run concurrently with
// each other; on the callback API OnReadDone and OnWriteDone may overlap
// (gRPC's reactions may run at once), so the stream locks its own state.
// Write, WritesDone and RemoveHold may come from any thread: a pacer's Write
// while the queue's thread starts a Read or Finish touches other op sets of
// the call, and gRPC core's batch start is thread-safe (the callback API
// does the same inside).
//
// Why two carriers: on Debian's gRPC 1.51 the callback API runs every
// completion of a process through one shared queue and its "nexting"
// threads, which is what made gmmscored move StreamScore to completion
// queues (server/cq_stream_server.h); the load generator shares the
// daemon's host and its CPU per answer counts against the daemon's
// (docs/PERFORMANCE.md, issue 23).
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_CALL_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_CALL_H_

#include <memory>

#include "client/load/lazy_answer.h"
#include "gmmscore/v1/scorer.grpc.pb.h"  // protobuf messages' serialization traits
#include "grpcpp/completion_queue.h"
#include "grpcpp/impl/codegen/channel_interface.h"
#include "grpcpp/support/status.h"

namespace gmmscore::load {

class LoadCallEvents {
 public:
  virtual ~LoadCallEvents() = default;
  virtual void OnWriteDone(bool ok) = 0;
  virtual void OnReadDone(bool ok) = 0;
  virtual void OnDone(const grpc::Status& status) = 0;
};

class LoadCall {
 public:
  virtual ~LoadCall() = default;
  // Holds OnDone back until the matching RemoveHold. Before Start, or while
  // another hold is held.
  virtual void AddHold() = 0;
  virtual void RemoveHold() = 0;
  virtual void Start(const v1::StreamScoreRequest* first, LazyStreamAnswer* answer) = 0;
  virtual void Write(const v1::StreamScoreRequest* request) = 0;
  virtual void WritesDone() = 0;
  virtual void Read(LazyStreamAnswer* answer) = 0;
  virtual void Cancel() = 0;
};

// StreamScore's method, answers read as LazyStreamAnswer.
const grpc::internal::RpcMethod& StreamScoreMethod();

// On the callback API (gRPC's own threads).
std::unique_ptr<LoadCall> NewCallbackLoadCall(grpc::ChannelInterface* channel,
                                              LoadCallEvents* events);

// On `queue` (a LoadQueues queue), whose thread delivers the events.
std::unique_ptr<LoadCall> NewCqLoadCall(grpc::ChannelInterface* channel, grpc::CompletionQueue* queue,
                                        LoadCallEvents* events);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_CALL_H_
