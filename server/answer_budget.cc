#include "server/answer_budget.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace gmmscore {

std::string FormatBytes(int64_t bytes) {
  if (bytes < (int64_t{1} << 20)) return absl::StrFormat("%d bytes", bytes);
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

AnswerCharge& AnswerCharge::operator=(AnswerCharge&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    stream_ = std::move(other.stream_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void AnswerCharge::Release() {
  if (budget_ != nullptr) budget_->held_.fetch_sub(bytes_, std::memory_order_relaxed);
  if (stream_ != nullptr) stream_->fetch_sub(bytes_, std::memory_order_relaxed);
  budget_ = nullptr;
  stream_.reset();
  bytes_ = 0;
}

void AnswerCharge::ShrinkTo(int64_t bytes) {
  if (bytes < 0 || bytes >= bytes_) return;
  const int64_t freed = bytes_ - bytes;
  if (budget_ != nullptr) budget_->held_.fetch_sub(freed, std::memory_order_relaxed);
  if (stream_ != nullptr) stream_->fetch_sub(freed, std::memory_order_relaxed);
  bytes_ = bytes;
}

void AnswerCharge::SetTo(int64_t bytes) {
  if (bytes < 0 || bytes == bytes_) return;
  if (bytes < bytes_) return ShrinkTo(bytes);
  const int64_t added = bytes - bytes_;
  if (budget_ != nullptr) budget_->held_.fetch_add(added, std::memory_order_relaxed);
  if (stream_ != nullptr) stream_->fetch_add(added, std::memory_order_relaxed);
  bytes_ = bytes;
}

bool AnswerBudget::TryCharge(int64_t bytes, std::shared_ptr<std::atomic<int64_t>> stream,
                             AnswerCharge* charge, bool count_refusal) {
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (limit_ > 0 && held + bytes > limit_) {
      if (count_refusal) refusals_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  if (stream != nullptr) stream->fetch_add(bytes, std::memory_order_relaxed);
  *charge = AnswerCharge(this, std::move(stream), bytes);
  return true;
}

}  // namespace gmmscore
