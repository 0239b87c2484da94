// LoadQueues: gmmscore-load's completion queues for streams on gRPC's
// completion-queue API (NewCqLoadCall, load_call.h), each drained by one
// thread of ours (named load-cq), every call's events on the queue it was
// made on.
//
//   LoadQueues queues(4);
//   auto call = NewCqLoadCall(channel, queues.queue(i), &events);
//   ... every call has heard OnDone ...
//   // ~LoadQueues shuts the queues down and joins their threads
//
// Every tag put on a queue must be a LoadQueueTag: its thread calls
// Proceed(ok) with the op's outcome.
//
// Thread safety: queue() from any thread; destroy only once no call made on
// the queues has an op in flight.
#ifndef GMMSCORE_CLIENT_LOAD_LOAD_QUEUES_H_
#define GMMSCORE_CLIENT_LOAD_LOAD_QUEUES_H_

#include <memory>
#include <thread>
#include <vector>

#include "grpcpp/completion_queue.h"

namespace gmmscore::load {

class LoadQueueTag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~LoadQueueTag() = default;
};

class LoadQueues {
 public:
  // `threads` >= 1 queues, each with its thread, running from here.
  explicit LoadQueues(int threads);
  ~LoadQueues();

  LoadQueues(const LoadQueues&) = delete;
  LoadQueues& operator=(const LoadQueues&) = delete;

  int size() const { return static_cast<int>(queues_.size()); }
  // Queue i % size().
  grpc::CompletionQueue* queue(int i) const { return queues_[i % queues_.size()].get(); }

 private:
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues_;
  std::vector<std::thread> threads_;
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_LOAD_QUEUES_H_
