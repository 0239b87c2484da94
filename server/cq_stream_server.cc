#include "server/cq_stream_server.h"

#include <utility>

#include "kernels/core/thread_name.h"

namespace gmmscore {
namespace {

// Requests kept open per queue at start (then wherever RequestCall places
// them), so that a burst of new streams (a load test ramping up thousands)
// does not wait for each accept to be re-armed.
constexpr int kRequestsPerQueue = 4;

}  // namespace

// One StreamScore call, from the request for it until OnDone. Every
// completion of the call arrives on its queue's one thread, so its events
// never overlap; Read, Write and SendStatus may come from any thread.
class CqStreamServer::Call final : public StreamCall {
 public:
  enum class Event { kAccepted, kRead, kWrite, kFinish, kDone };
  // What a completion queue hands back: the call and which of its ops.
  struct Tag {
    Call* call;
    Event event;
  };

  Call(CqStreamServer* server, int queue)
      : server_(server), queue_(queue), cq_(server->queues_[queue].get()) {
    // Before the request, as gRPC requires: the done tag is what tells a
    // cancelled call apart.
    context_.AsyncNotifyWhenDone(&done_tag_);
    server_->service_->RequestStream(&context_, &stream_, cq_, &accepted_tag_);
  }

  void Bind(StreamCallEvents* events) override { events_ = events; }

  void Read(StreamRequestIn* request) override {
    StartOp();
    stream_.Read(request, &read_tag_);
  }
  void Write(const grpc::ByteBuffer* answer) override {
    StartOp();
    stream_.Write(*answer, &write_tag_);
  }
  void SendStatus(const grpc::Status& status) override {
    StartOp();
    stream_.Finish(status, &finish_tag_);
  }
  // The done tag then reports the cancellation (OnCancel).
  void Cancel() override { context_.TryCancel(); }

  // A completion of this call, on its queue's thread.
  void Proceed(Event event, bool ok) {
    switch (event) {
      case Event::kAccepted:
        if (!ok) {  // the server is shutting down: no call came
          Delete();
          return;
        }
        accepted_ = true;
        server_->CallAccepted(queue_);
        server_->RequestCall();  // keep as many requests open, on the lightest queue
        server_->service_->StartStream(context_, this);  // binds, reads or finishes
        if (cancelled_early_) events_->OnCancel();
        break;
      case Event::kRead:
        OpDone();
        events_->OnReadDone(ok);
        break;
      case Event::kWrite:
        OpDone();
        events_->OnWriteDone(ok);
        break;
      case Event::kFinish:
        OpDone();
        finish_done_ = true;
        break;
      case Event::kDone:
        done_seen_ = true;
        if (context_.IsCancelled()) {
          // Seen before the accept (the queue's order is not promised):
          // told once the session exists.
          if (accepted_) {
            events_->OnCancel();
          } else {
            cancelled_early_ = true;
          }
        }
        break;
    }
    if (accepted_ && done_seen_ && finish_done_ && OpsInFlight() == 0) {
      // Every op has completed and none can start (SendStatus was the
      // session's last): the session hears OnDone, and this call goes.
      events_->OnDone();
      Delete();
    }
  }

 private:
  void StartOp() {
    absl::MutexLock lock(&mu_);
    ++ops_in_flight_;
  }
  void OpDone() {
    absl::MutexLock lock(&mu_);
    --ops_in_flight_;
  }
  int OpsInFlight() {
    absl::MutexLock lock(&mu_);
    return ops_in_flight_;
  }
  void Delete() {
    CqStreamServer* server = server_;
    const int queue = queue_;
    const bool accepted = accepted_;
    delete this;
    server->CallDeleted(queue, accepted);
  }

  CqStreamServer* const server_;
  const int queue_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::ServerContext context_;
  ScorerService::StreamScoreReaderWriter stream_{
      &context_};
  Tag accepted_tag_{this, Event::kAccepted};
  Tag read_tag_{this, Event::kRead};
  Tag write_tag_{this, Event::kWrite};
  Tag finish_tag_{this, Event::kFinish};
  Tag done_tag_{this, Event::kDone};
  StreamCallEvents* events_ = nullptr;

  // The queue thread's alone.
  bool accepted_ = false;
  bool cancelled_early_ = false;
  bool done_seen_ = false;
  bool finish_done_ = false;

  // Ops are started from answer threads too.
  absl::Mutex mu_;
  int ops_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

CqStreamServer::CqStreamServer(grpc::ServerBuilder* builder, ScorerService* service,
                               int threads)
    : service_(service), queue_calls_(threads) {
  for (int i = 0; i < threads; ++i) queues_.push_back(builder->AddCompletionQueue());
}

CqStreamServer::~CqStreamServer() { Stop(); }

void CqStreamServer::Start() {
  for (size_t i = 0; i < kRequestsPerQueue * queues_.size(); ++i) RequestCall();
  for (const auto& queue : queues_) {
    threads_.emplace_back([cq = queue.get()] {
      NameCurrentThread("gs-stream-cq");
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) {
        auto* call_tag = static_cast<Call::Tag*>(tag);
        call_tag->call->Proceed(call_tag->event, ok);
      }
    });
  }
}

void CqStreamServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    // No op may be started on a queue once it is shut down: every call
    // (and every open request, which the server's Shutdown fails) goes first.
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::vector<QueueCalls>* queues) {
          for (const QueueCalls& queue : *queues) {
            if (queue.alive != 0) return false;
          }
          return true;
        },
        &queue_calls_));
  }
  for (const auto& queue : queues_) queue->Shutdown();
  if (threads_.empty()) {
    for (const auto& queue : queues_) DrainQueue(queue.get());
  }
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void CqStreamServer::RequestCall() {
  int lightest;
  {
    absl::MutexLock lock(&mu_);
    lightest = LightestQueue();
    ++queue_calls_[lightest].alive;
  }
  // The call may be bound to another queue than this thread's: its first
  // completion (even a failed request at shutdown, which deletes it) comes
  // on that queue's thread, and nothing here touches it after the request.
  new Call(this, lightest);
}

int CqStreamServer::LightestQueue() {
  // Ties go round the queues from the last choice, so that equal queues
  // take turns rather than the first one taking every request.
  const int n = static_cast<int>(queue_calls_.size());
  int lightest = (last_chosen_ + 1) % n;
  for (int k = 1; k < n; ++k) {
    const int i = (last_chosen_ + 1 + k) % n;
    if (queue_calls_[i].alive < queue_calls_[lightest].alive) lightest = i;
  }
  last_chosen_ = lightest;
  return lightest;
}

void CqStreamServer::CallAccepted(int queue) {
  absl::MutexLock lock(&mu_);
  ++queue_calls_[queue].accepted;
}

void CqStreamServer::CallDeleted(int queue, bool accepted) {
  absl::MutexLock lock(&mu_);
  --queue_calls_[queue].alive;
  if (accepted) --queue_calls_[queue].accepted;
}

std::vector<int64_t> CqStreamServer::CallsPerQueue() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> calls;
  for (const QueueCalls& queue : queue_calls_) calls.push_back(queue.accepted);
  return calls;
}

void CqStreamServer::DrainQueue(grpc::ServerCompletionQueue* cq) {
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
  }
}

}  // namespace gmmscore
