#include "client/load/load_queues.h"

#include <algorithm>

#include "kernels/core/thread_name.h"

namespace gmmscore::load {

LoadQueues::LoadQueues(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    queues_.push_back(std::make_unique<grpc::CompletionQueue>());
  }
  for (const auto& queue : queues_) {
    threads_.emplace_back([cq = queue.get()] {
      NameCurrentThread("load-cq");
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) static_cast<LoadQueueTag*>(tag)->Proceed(ok);
    });
  }
}

LoadQueues::~LoadQueues() {
  for (const auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
}

}  // namespace gmmscore::load
