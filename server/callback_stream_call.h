// CallbackStreamCall: a StreamCall on gRPC's callback API. gRPC runs its
// reactions on the library's shared callback threads (gRPC 1.51 on Linux:
// one completion queue that cores/2 "nexting" threads take turns on); the
// reactor forwards them to the session and deletes itself after OnDone.
//
//   auto* call = new CallbackStreamCall(context);
//   new StreamScoreSession(env, call, ...);  // binds to the call
//   return call;                             // to gRPC, from the service method
#ifndef GMMSCORE_SERVER_CALLBACK_STREAM_CALL_H_
#define GMMSCORE_SERVER_CALLBACK_STREAM_CALL_H_

#include "grpcpp/support/server_callback.h"
#include "server/stream_call.h"

namespace gmmscore {

class CallbackStreamCall final
    : public grpc::ServerBidiReactor<StreamRequestIn, grpc::ByteBuffer>,
      public StreamCall {
 public:
  // `context` is the call's; gRPC keeps it alive until OnDone.
  explicit CallbackStreamCall(grpc::CallbackServerContext* context) : context_(context) {}

  void Bind(StreamCallEvents* events) override { events_ = events; }
  void Read(StreamRequestIn* request) override { StartRead(request); }
  void Write(const grpc::ByteBuffer* answer) override { StartWrite(answer); }
  void SendStatus(const grpc::Status& status) override { Finish(status); }
  void Cancel() override { context_->TryCancel(); }

  void OnReadDone(bool ok) override { events_->OnReadDone(ok); }
  void OnWriteDone(bool ok) override { events_->OnWriteDone(ok); }
  void OnCancel() override { events_->OnCancel(); }
  void OnDone() override {
    events_->OnDone();
    delete this;
  }

 private:
  grpc::CallbackServerContext* const context_;
  StreamCallEvents* events_ = nullptr;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_CALLBACK_STREAM_CALL_H_
