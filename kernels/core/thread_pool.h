// ThreadPool: a fixed set of worker threads that run parallel loops, so that
// a scoring call never creates threads of its own.
//
//   ThreadPool pool(/*num_workers=*/3);
//   pool.ParallelFor(num_chunks, [&](int64_t chunk) { ScoreChunk(chunk); });
//
// The calling thread works on its own loop too, so a pool of N - 1 workers
// keeps N cores busy. Several threads may call ParallelFor at once: their
// loops queue up in arrival order, each worker finishes its share of the
// oldest loop before it moves on, and every caller keeps working on its own
// loop, so a caller never waits on another caller's work alone.
//
// Built on std::mutex and std::condition_variable rather than absl::Mutex:
// Debian's Abseil is not built for ThreadSanitizer, which then reports false
// races through it, and this class is worth checking with TSan.
#ifndef GMMSCORE_KERNELS_CORE_THREAD_POOL_H_
#define GMMSCORE_KERNELS_CORE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace gmmscore {

class ThreadPool {
 public:
  // Starts `num_workers` threads named `name` (see NameCurrentThread; 0 is
  // allowed: every loop then runs on its caller). Negative counts are
  // treated as 0.
  explicit ThreadPool(int num_workers, std::string_view name = "gs-pool");
  // Joins the workers. No ParallelFor may be running.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_workers() const { return static_cast<int>(workers_.size()); }

  // Calls body(i) exactly once for every i in [0, count), on the workers and
  // the calling thread, in no particular order, and returns when all calls
  // have returned. `body` must be safe to call concurrently. count <= 0 does
  // nothing. Thread-safe. Must not be called from inside a body.
  void ParallelFor(int64_t count, absl::FunctionRef<void(int64_t)> body);

 private:
  // One ParallelFor call; lives on its caller's stack.
  struct Loop {
    Loop(int64_t count_in, absl::FunctionRef<void(int64_t)> body_in)
        : count(count_in), body(body_in) {}
    const int64_t count;
    const absl::FunctionRef<void(int64_t)> body;
    std::atomic<int64_t> next{0};  // next index to hand out
    int64_t finished = 0;          // indices whose body returned; under mu_
    int helpers = 0;               // workers inside RunIndices; under mu_
  };

  // Runs indices of `loop` until none are left; returns how many it ran.
  static int64_t RunIndices(Loop& loop);
  void WorkerMain();

  std::mutex mu_;
  std::condition_variable work_or_stop_;  // queue_ gained a loop, or stopping_
  std::condition_variable loop_done_;     // some Loop's finished/helpers changed
  std::deque<Loop*> queue_;               // loops with indices left; under mu_
  bool stopping_ = false;                 // under mu_
  std::vector<std::thread> workers_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_THREAD_POOL_H_
