#include "kernels/core/thread_pool.h"

#include <algorithm>

#include "kernels/core/thread_name.h"

namespace gmmscore {

ThreadPool::ThreadPool(int num_workers, std::string_view name) {
  workers_.reserve(std::max(num_workers, 0));
  for (int i = 0; i < num_workers; ++i) {
    workers_.emplace_back([this, thread_name = std::string(name)] {
      NameCurrentThread(thread_name);
      WorkerMain();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_or_stop_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

int64_t ThreadPool::RunIndices(Loop& loop) {
  int64_t ran = 0;
  for (int64_t i = loop.next.fetch_add(1, std::memory_order_relaxed); i < loop.count;
       i = loop.next.fetch_add(1, std::memory_order_relaxed)) {
    loop.body(i);
    ++ran;
  }
  return ran;
}

void ThreadPool::ParallelFor(int64_t count, absl::FunctionRef<void(int64_t)> body) {
  if (count <= 0) return;
  Loop loop(count, body);
  // A single index, or nobody to share with: no need to wake anyone.
  if (count == 1 || workers_.empty()) {
    RunIndices(loop);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(&loop);
  }
  work_or_stop_.notify_all();
  const int64_t ran = RunIndices(loop);

  std::unique_lock<std::mutex> lock(mu_);
  // Every index is handed out now; make sure no worker picks the loop up again.
  auto it = std::find(queue_.begin(), queue_.end(), &loop);
  if (it != queue_.end()) queue_.erase(it);
  loop.finished += ran;
  // Workers still inside RunIndices may touch `loop`; wait for them to leave.
  loop_done_.wait(lock, [&] { return loop.finished == loop.count && loop.helpers == 0; });
}

void ThreadPool::WorkerMain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_or_stop_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Loop* loop = queue_.front();
    ++loop->helpers;
    lock.unlock();
    const int64_t ran = RunIndices(*loop);
    lock.lock();
    // Nothing is left to hand out: retire the loop so no one else looks at it.
    if (!queue_.empty() && queue_.front() == loop) queue_.pop_front();
    loop->finished += ran;
    --loop->helpers;
    // Notified under the lock: once its caller sees the loop done it may
    // destroy it, and this thread must not touch it after unlocking.
    if (loop->finished == loop->count && loop->helpers == 0) loop_done_.notify_all();
  }
}

}  // namespace gmmscore
