#include "client/load/pacer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "kernels/core/thread_name.h"

namespace gmmscore::load {
namespace {

// Heap order: the earliest (then first scheduled) task on top.
template <typename T>
bool Later(const T& a, const T& b) {
  return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.seq > b.seq;
}

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// The wall clock less the run's clock, from the tightest of a few brackets
// of run, wall, run readings: a thread paused inside a bracket would shift
// every converted time by the pause.
int64_t WallMinusRunNs() {
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  int64_t offset = 0;
  for (int i = 0; i < 16; ++i) {
    const int64_t before = NowNs();
    const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    const int64_t after = NowNs();
    if (after - before < best_gap) {
      best_gap = after - before;
      offset = wall - (before + (after - before) / 2);
    }
  }
  return offset;
}

}  // namespace

int64_t RunNsOfUnixMicros(int64_t unix_us) {
  static const int64_t wall_minus_run = WallMinusRunNs();
  return unix_us * 1000 - wall_minus_run;
}

Pacer::Pacer(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    lanes_.push_back(std::make_unique<Lane>());
    Lane* lane = lanes_.back().get();
    lane->thread = std::thread([lane] { LaneLoop(lane); });
  }
}

Pacer::~Pacer() {
  for (auto& lane : lanes_) {
    {
      std::lock_guard<std::mutex> lock(lane->mu);
      lane->stopping = true;
    }
    lane->cv.notify_all();
  }
  for (auto& lane : lanes_) lane->thread.join();
}

void Pacer::Schedule(int64_t due_ns, absl::AnyInvocable<void()> task) {
  Lane& lane = *lanes_[next_lane_.fetch_add(1, std::memory_order_relaxed) % lanes_.size()];
  bool earliest;
  {
    std::lock_guard<std::mutex> lock(lane.mu);
    lane.heap.push_back({due_ns, lane.next_seq++, std::move(task)});
    std::push_heap(lane.heap.begin(), lane.heap.end(), Later<Task>);
    earliest = lane.heap.front().seq == lane.next_seq - 1;
  }
  if (earliest) lane.cv.notify_one();
}

void Pacer::LaneLoop(Lane* lane) {
  NameCurrentThread("load-pacer");
  std::unique_lock<std::mutex> lock(lane->mu);
  while (true) {
    if (lane->heap.empty()) {
      if (lane->stopping) return;
      lane->cv.wait(lock);
      continue;
    }
    const int64_t due = lane->heap.front().due_ns;
    if (!lane->stopping && due > NowNs()) {
      lane->cv.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(due)));
      continue;
    }
    std::pop_heap(lane->heap.begin(), lane->heap.end(), Later<Task>);
    Task task = std::move(lane->heap.back());
    lane->heap.pop_back();
    lock.unlock();
    task.run();
    lock.lock();
  }
}

}  // namespace gmmscore::load
