// StreamCall: what a StreamScore session (stream_score_session.h) needs of its
// RPC, whichever gRPC API carries it: the callback API's reactor
// (CallbackStreamCall) or a completion queue drained by a thread of ours
// (cq_stream_server.h). The session states its reads, writes and final
// status through StreamCall and hears back through StreamCallEvents, with the
// callback API's rules on both sides:
//   - at most one Read and one Write in flight, each message alive until its
//     completion; SendStatus once, with no Write in flight;
//   - a read whose bytes do not decode completes with ok = true and the
//     decoding error in the message's status (decoded_message.h);
//   - Cancel may come at any time before SendStatus, from any thread: the
//     RPC ends as if the client had cancelled (OnCancel, ops in flight fail);
//   - OnReadDone/OnWriteDone(false) when the call is over for that direction;
//     OnCancel at most once (client cancel, deadline, server shutdown);
//     OnDone last, once SendStatus has completed and no op is in flight;
//   - no method of StreamCall may be called once OnDone has begun: the call
//     object deletes itself after OnDone.
// Events of one call never run concurrently with each other.
#ifndef GMMSCORE_SERVER_STREAM_CALL_H_
#define GMMSCORE_SERVER_STREAM_CALL_H_

#include "gmmscore/v1/scorer.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "server/decoded_message.h"

namespace gmmscore {

class StreamCallEvents {
 public:
  virtual ~StreamCallEvents() = default;
  virtual void OnReadDone(bool ok) = 0;
  virtual void OnWriteDone(bool ok) = 0;
  virtual void OnCancel() = 0;
  virtual void OnDone() = 0;
};

using StreamRequestIn = DecodedMessage<v1::StreamScoreRequest>;

class StreamCall {
 public:
  virtual ~StreamCall() = default;
  // Where events go; called once, before the first Read, Write or SendStatus.
  virtual void Bind(StreamCallEvents* events) = 0;
  virtual void Read(StreamRequestIn* request) = 0;
  // `answer`: a StreamScoreResponse's bytes (server/answer_encoder.h).
  virtual void Write(const grpc::ByteBuffer* answer) = 0;
  virtual void SendStatus(const grpc::Status& status) = 0;
  // Ends the RPC from the server's side (a client that stopped reading
  // cannot be sent a status: its write never completes).
  virtual void Cancel() = 0;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_STREAM_CALL_H_
