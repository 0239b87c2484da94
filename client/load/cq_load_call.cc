// LoadCall on gRPC's completion-queue API: a ClientAsyncReaderWriter whose
// completions arrive on a LoadQueues queue; that queue's thread delivers the
// events (load_call.h). OnDone is delivered by whichever completion or
// RemoveHold leaves nothing outstanding: the call's status read, no op in
// flight, no hold. One atomic count of those, so that the thread that
// delivers OnDone is the last to touch the call (no lock to release after).
#include <atomic>
#include <memory>

#include "client/load/load_call.h"
#include "client/load/load_queues.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/async_stream.h"

namespace gmmscore::load {
namespace {

class CqLoadCall final : public LoadCall {
 public:
  CqLoadCall(grpc::ChannelInterface* channel, grpc::CompletionQueue* queue, LoadCallEvents* events)
      : channel_(channel), queue_(queue), events_(events) {}

  void AddHold() override { Hold(1); }
  void RemoveHold() override { Release(); }

  // The first write and read wait for the start's completion: gRPC sends
  // the initial metadata with the write's ops, so a write before it is
  // misuse (GRPC_CALL_ERROR_TOO_MANY_OPERATIONS).
  void Start(const v1::StreamScoreRequest* first, LazyStreamAnswer* answer) override {
    first_ = first;
    first_answer_ = answer;
    // Made first, started after: the start's completion uses stream_.
    stream_.reset(grpc::internal::ClientAsyncReaderWriterFactory<
                  v1::StreamScoreRequest, LazyStreamAnswer>::Create(channel_, queue_,
                                                                    StreamScoreMethod(), &context_,
                                                                    /*start=*/false, nullptr));
    Hold(1);
    stream_->StartCall(&start_tag_);
  }
  void Write(const v1::StreamScoreRequest* request) override {
    Hold(1);
    stream_->Write(*request, &write_tag_);
  }
  void WritesDone() override {
    Hold(1);
    stream_->WritesDone(&writes_done_tag_);
  }
  void Read(LazyStreamAnswer* answer) override {
    Hold(1);
    stream_->Read(answer, &read_tag_);
  }
  void Cancel() override { context_.TryCancel(); }

 private:
  enum class Op { kStart, kWrite, kWritesDone, kRead, kFinish };
  struct Tag final : LoadQueueTag {
    Tag(CqLoadCall* call, Op op) : call(call), op(op) {}
    void Proceed(bool ok) override { call->Proceed(op, ok); }
    CqLoadCall* const call;
    const Op op;
  };

  // A completion of this call, on its queue's thread.
  void Proceed(Op op, bool ok) {
    switch (op) {
      case Op::kStart:
        if (ok) {
          Hold(2);
          stream_->Write(*first_, &write_tag_);
          stream_->Read(first_answer_, &read_tag_);
        } else {  // both directions are over before they began
          stream_->Finish(&status_, &finish_tag_);
          events_->OnWriteDone(false);
          events_->OnReadDone(false);
        }
        break;
      case Op::kWritesDone:
        break;  // a failed half-close shows in the reads and the status
      case Op::kWrite:
        events_->OnWriteDone(ok);
        break;
      case Op::kRead:
        // No more answers: the status is what is left to read.
        if (!ok) stream_->Finish(&status_, &finish_tag_);
        events_->OnReadDone(ok);
        break;
      case Op::kFinish:
        break;
    }
    Release();  // this op's (or the status's)
  }

  // Ops and holds are added only while something else is outstanding (the
  // status at least), so the count never rises from zero.
  void Hold(int n) { outstanding_.fetch_add(n, std::memory_order_relaxed); }
  void Release() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      events_->OnDone(status_);  // nothing of ours after this
    }
  }

  grpc::ChannelInterface* const channel_;
  grpc::CompletionQueue* const queue_;
  LoadCallEvents* const events_;
  grpc::ClientContext context_;  // outlives stream_, which lives in its call's arena
  std::unique_ptr<grpc::ClientAsyncReaderWriter<v1::StreamScoreRequest, LazyStreamAnswer>> stream_;
  const v1::StreamScoreRequest* first_ = nullptr;  // Start's, sent once started
  LazyStreamAnswer* first_answer_ = nullptr;
  grpc::Status status_;  // Finish's; read once nothing is outstanding
  Tag start_tag_{this, Op::kStart};
  Tag write_tag_{this, Op::kWrite};
  Tag writes_done_tag_{this, Op::kWritesDone};
  Tag read_tag_{this, Op::kRead};
  Tag finish_tag_{this, Op::kFinish};

  // Ops in flight (Finish's not counted) + holds + 1 until the status is in.
  std::atomic<int> outstanding_{1};
};

}  // namespace

std::unique_ptr<LoadCall> NewCqLoadCall(grpc::ChannelInterface* channel, grpc::CompletionQueue* queue,
                                        LoadCallEvents* events) {
  return std::make_unique<CqLoadCall>(channel, queue, events);
}

}  // namespace gmmscore::load
