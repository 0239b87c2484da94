// AnswerSendStats: how long StreamScore answers wait to be sent and how long
// gRPC takes to send them, summed over the answers of every stream, so that
// the time between the scheduler and the client can be split into the
// server's sending and the rest (the network, the client's reading).
//
//   stats.Add(/*wait=*/absl::Microseconds(40), /*send=*/absl::Milliseconds(2));
//   AnswerSendTotals totals = stats.totals();  // into GetServerStats
//
// Thread safety: Add and totals may be called from any thread.
#ifndef GMMSCORE_SERVER_ANSWER_SEND_STATS_H_
#define GMMSCORE_SERVER_ANSWER_SEND_STATS_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace gmmscore {

struct AnswerSendTotals {
  int64_t answers = 0;
  // From the answer's chunk being fully scored to gRPC taking the message:
  // the stream's earlier answers were still being sent (answers go out in
  // order, one at a time).
  absl::Duration wait;
  // From StartWrite to OnWriteDone: gRPC framing the message and passing it
  // through HTTP/2 flow control (the client's receive window) to the socket.
  absl::Duration send;
};

class AnswerSendStats {
 public:
  void Add(absl::Duration wait, absl::Duration send) {
    answers_.fetch_add(1, std::memory_order_relaxed);
    wait_ns_.fetch_add(absl::ToInt64Nanoseconds(wait), std::memory_order_relaxed);
    send_ns_.fetch_add(absl::ToInt64Nanoseconds(send), std::memory_order_relaxed);
  }

  // The three sums are read one after another, not as one snapshot: an
  // answer added meanwhile may be in some of them (a rounding error of one
  // answer in millions).
  AnswerSendTotals totals() const {
    return {.answers = answers_.load(std::memory_order_relaxed),
            .wait = absl::Nanoseconds(wait_ns_.load(std::memory_order_relaxed)),
            .send = absl::Nanoseconds(send_ns_.load(std::memory_order_relaxed))};
  }

 private:
  std::atomic<int64_t> answers_{0};
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int64_t> send_ns_{0};
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ANSWER_SEND_STATS_H_
