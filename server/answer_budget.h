// AnswerBudget: bytes of answers computed for clients and not yet taken by
// them, counted per stream and for the whole server, so that clients who
// stop reading cannot hold memory without bound (issue 16: 200 such streams
// took the daemon from 183 MB to 5.1 GB).
//
//   AnswerBudget server_budget(int64_t{4096} << 20);   // one per service
//   auto stream_bytes = std::make_shared<std::atomic<int64_t>>(0);  // per stream
//   AnswerCharge charge;
//   if (!server_budget.TryCharge(bytes, stream_bytes, &charge)) ... refuse ...
//   ... hold `charge` with the chunk until its answer is written ...
//
// A stream charges each chunk when it accepts it (the chunk's results will
// exist) and releases the charge when gRPC has taken the chunk's answer, or
// when the chunk is dropped. Releasing is the charge's destructor, so no path
// that drops a chunk can forget it.
//
// Thread safety: thread-safe; charges may be released on any thread.
#ifndef GMMSCORE_SERVER_ANSWER_BUDGET_H_
#define GMMSCORE_SERVER_ANSWER_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace gmmscore {

class AnswerBudget;

// "2400 bytes" below 1 MiB, else "3.5 MiB": for messages about the budget.
std::string FormatBytes(int64_t bytes);

// One charge; move-only; releases its bytes from the server's and the
// stream's counts when destroyed.
class AnswerCharge {
 public:
  AnswerCharge() = default;
  AnswerCharge(AnswerCharge&& other) noexcept { *this = std::move(other); }
  AnswerCharge& operator=(AnswerCharge&& other) noexcept;
  ~AnswerCharge() { Release(); }

  int64_t bytes() const { return bytes_; }
  void Release();
  // Keeps only `bytes` of the charge (no change when that is no less):
  // once a chunk's results are known to be smaller than charged (states
  // selected on the GPU: top_k 100 of 5000 takes 1/25 of the bytes).
  void ShrinkTo(int64_t bytes);
  // Makes the charge `bytes` (negative: no change), shrinking or growing.
  // Growing is never refused, so the server's count may pass its limit:
  // the bytes exist already (results larger than the chunk's admission
  // estimate, e.g. a stream moved to a backend that does not select), and
  // the next TryCharge calls are refused until they are taken.
  void SetTo(int64_t bytes);

 private:
  friend class AnswerBudget;
  AnswerCharge(AnswerBudget* budget, std::shared_ptr<std::atomic<int64_t>> stream, int64_t bytes)
      : budget_(budget), stream_(std::move(stream)), bytes_(bytes) {}

  AnswerBudget* budget_ = nullptr;
  std::shared_ptr<std::atomic<int64_t>> stream_;
  int64_t bytes_ = 0;
};

class AnswerBudget {
 public:
  // `limit_bytes` <= 0: no server-wide limit (streams still count).
  explicit AnswerBudget(int64_t limit_bytes) : limit_(limit_bytes) {}

  // Adds `bytes` to the server's count and to *stream, or adds nothing and
  // returns false when the server would go past its limit (counted in
  // refusals() unless `count_refusal` is false: the caller will try again).
  // The charge is written to *charge on success.
  bool TryCharge(int64_t bytes, std::shared_ptr<std::atomic<int64_t>> stream,
                 AnswerCharge* charge, bool count_refusal = true);

  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }
  // TryCharge calls refused so far (those counted).
  int64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  friend class AnswerCharge;
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> refusals_{0};
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ANSWER_BUDGET_H_
