// LoadCall on gRPC's callback API: the reactor is the carrier, and gRPC's
// own threads deliver its events (load_call.h).
#include <memory>

#include "client/load/load_call.h"
#include "grpcpp/support/client_callback.h"

namespace gmmscore::load {
namespace {

class CallbackLoadCall final
    : public LoadCall,
      public grpc::ClientBidiReactor<v1::StreamScoreRequest, LazyStreamAnswer> {
 public:
  // Binds the reactor to a new call (holds may be added from here on),
  // started by Start.
  CallbackLoadCall(grpc::ChannelInterface* channel, LoadCallEvents* events) : events_(events) {
    grpc::internal::ClientCallbackReaderWriterFactory<v1::StreamScoreRequest, LazyStreamAnswer>::Create(
        channel, StreamScoreMethod(), &context_, this);
  }

  void AddHold() override { ClientBidiReactor::AddHold(); }
  void RemoveHold() override { ClientBidiReactor::RemoveHold(); }
  void Start(const v1::StreamScoreRequest* first, LazyStreamAnswer* answer) override {
    StartWrite(first);
    StartRead(answer);
    StartCall();
  }
  void Write(const v1::StreamScoreRequest* request) override { StartWrite(request); }
  void WritesDone() override { StartWritesDone(); }
  void Read(LazyStreamAnswer* answer) override { StartRead(answer); }
  void Cancel() override { context_.TryCancel(); }

  void OnWriteDone(bool ok) override { events_->OnWriteDone(ok); }
  void OnReadDone(bool ok) override { events_->OnReadDone(ok); }
  void OnWritesDoneDone(bool /*ok*/) override {}
  void OnDone(const grpc::Status& status) override { events_->OnDone(status); }

 private:
  LoadCallEvents* const events_;
  grpc::ClientContext context_;
};

}  // namespace

const grpc::internal::RpcMethod& StreamScoreMethod() {
  static const grpc::internal::RpcMethod* const method = new grpc::internal::RpcMethod(
      "/gmmscore.v1.AcousticScorer/StreamScore", grpc::internal::RpcMethod::BIDI_STREAMING);
  return *method;
}

std::unique_ptr<LoadCall> NewCallbackLoadCall(grpc::ChannelInterface* channel,
                                              LoadCallEvents* events) {
  return std::make_unique<CallbackLoadCall>(channel, events);
}

}  // namespace gmmscore::load
