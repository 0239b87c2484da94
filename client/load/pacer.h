// Pacer: the clock of real-time streams. Runs small tasks at given times on
// a few threads of its own, so that thousands of streams can each send a
// chunk every 100 ms without a thread per stream.
//
//   Pacer pacer(/*threads=*/1);
//   pacer.Schedule(NowNs() + 100'000'000, [] { ...send the next chunk... });
//
// A task runs on a pacer thread at or after its time (as soon as possible
// when the time is past), never before; tasks due at the same time run in
// the order they were scheduled. Tasks must be short (they delay the tasks
// behind them) and may call Schedule. Lateness is the thread's wake-up
// delay plus the tasks ahead of it: pacer_test.cc measures it.
//
// Thread safety: Schedule may be called from any thread.
#ifndef GMMSCORE_CLIENT_LOAD_PACER_H_
#define GMMSCORE_CLIENT_LOAD_PACER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace gmmscore::load {

// Nanoseconds on the monotonic clock (std::chrono::steady_clock) that every
// time of a load test is measured on.
int64_t NowNs();
// A time another process on this host stamped on its wall clock
// (std::chrono::system_clock, microseconds since the Unix epoch), on the
// run's clock. The two clocks' offset is read once per process, so a step
// of the wall clock after that shifts every time converted.
int64_t RunNsOfUnixMicros(int64_t unix_us);

class Pacer {
 public:
  // Starts `threads` (>= 1) threads; each task goes to one of them, in turn.
  explicit Pacer(int threads = 1);
  // Runs the tasks still queued (at once, ignoring their times), then joins:
  // a task is never dropped, so whatever it releases is released.
  ~Pacer();

  Pacer(const Pacer&) = delete;
  Pacer& operator=(const Pacer&) = delete;

  void Schedule(int64_t due_ns, absl::AnyInvocable<void()> task);

 private:
  struct Task {
    int64_t due_ns;
    uint64_t seq;  // ties run in scheduling order
    absl::AnyInvocable<void()> run;
  };
  // One thread and its heap of tasks (earliest first).
  struct Lane {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Task> heap;
    uint64_t next_seq = 0;
    bool stopping = false;
    std::thread thread;
  };
  static void LaneLoop(Lane* lane);

  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<uint64_t> next_lane_{0};
};

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_PACER_H_
