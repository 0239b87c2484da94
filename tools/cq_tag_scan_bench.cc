// How a completion's cost grows with the ops outstanding on its queue, in
// the gRPC this machine links (Debian's 1.51 is built without NDEBUG, so
// every completion scans the queue's list of outstanding tags under the
// queue's mutex: cq_check_tag in src/core/lib/surface/completion_queue.cc).
// Not built by CMake; the figures are in docs/PERFORMANCE.md (stop 48).
//
//   g++ -O2 -std=c++17 tools/cq_tag_scan_bench.cc -o /tmp/cq_tag_scan_bench \
//       $(pkg-config --cflags --libs grpc++) && /tmp/cq_tag_scan_bench
//
// For each N: N alarms parked on one queue with a deadline far away (each an
// outstanding tag, as a stream's pending read is), then 20000 times one more
// alarm set and cancelled at once (a completion without the timer's
// millisecond granularity) and taken off the queue: the time one such op
// takes, start to completion.
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

int main() {
  for (int parked : {0, 500, 1000, 2000, 4000, 8000}) {
    grpc::CompletionQueue cq;
    std::vector<std::unique_ptr<grpc::Alarm>> far(parked);
    const auto later = std::chrono::system_clock::now() + std::chrono::hours(1);
    for (int i = 0; i < parked; ++i) {
      far[i] = std::make_unique<grpc::Alarm>();
      far[i]->Set(&cq, later, far[i].get());
    }
    constexpr int kRounds = 20000;
    grpc::Alarm now_alarm;
    void* tag;
    bool ok;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < kRounds; ++r) {
      now_alarm.Set(&cq, later, &now_alarm);
      now_alarm.Cancel();
      cq.Next(&tag, &ok);
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
        kRounds;
    std::printf("outstanding tags %5d: %.3f us an op\n", parked, us);
    for (auto& alarm : far) alarm->Cancel();
    for (int i = 0; i < parked; ++i) cq.Next(&tag, &ok);
    far.clear();
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
}
