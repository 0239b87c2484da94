#include "kernels/cuda/lane_pool.h"

#include <algorithm>
#include <utility>

#include "kernels/core/status_macros.h"
#include "kernels/cuda/cuda_check.h"

namespace gmmscore {

LaneLease::LaneLease(LaneLease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      lane_(std::exchange(other.lane_, nullptr)),
      idle_(other.idle_) {}

LaneLease::~LaneLease() {
  if (lane_ == nullptr) return;
  // The error (if any) was reported by the call that failed; this wait only
  // keeps the next call off buffers the queued work still uses.
  if (!idle_) cudaStreamSynchronize(lane_->stream.get());
  pool_->Release(lane_);
}

absl::StatusOr<std::unique_ptr<LanePool>> LanePool::Create(int device, int count) {
  std::unique_ptr<LanePool> pool(new LanePool(device, count));
  for (Lane& lane : pool->lanes_) {
    GMM_ASSIGN_OR_RETURN(lane.stream, CudaStream::Create());
    GMM_ASSIGN_OR_RETURN(lane.cublas, CublasHandle::Create());
    GMM_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(lane.cublas.get(), CUBLAS_DEFAULT_MATH),
                               "set cuBLAS math mode");
    lane.gemm.cublas = lane.cublas.get();
    lane.tied.cublas = lane.cublas.get();
    pool->free_lanes_.push_back(&lane);
  }
  return pool;
}

LanePool::~LanePool() {
  cudaSetDevice(device_);
  for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream.get());
}

LaneLease LanePool::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  auto unwanted = [&] {
    return std::find_if(free_lanes_.rbegin(), free_lanes_.rend(), [&](Lane* lane) {
      return std::find(wanted_.begin(), wanted_.end(), lane) == wanted_.end();
    });
  };
  lane_free_.wait(lock, [&] { return unwanted() != free_lanes_.rend(); });
  const auto it = unwanted();
  Lane* lane = *it;
  free_lanes_.erase(std::next(it).base());
  return LaneLease(this, lane);
}

LaneLease LanePool::AcquireLane(int index) {
  Lane* lane = &lanes_.at(index);
  std::unique_lock<std::mutex> lock(mu_);
  wanted_.push_back(lane);
  auto free = [&] { return std::find(free_lanes_.begin(), free_lanes_.end(), lane); };
  lane_free_.wait(lock, [&] { return free() != free_lanes_.end(); });
  free_lanes_.erase(free());
  wanted_.erase(std::find(wanted_.begin(), wanted_.end(), lane));
  return LaneLease(this, lane);
}

void LanePool::Release(Lane* lane) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_lanes_.push_back(lane);
  }
  // All: a waiter for one lane (AcquireLane) must not take the only wake-up
  // while a waiter for any lane sleeps on.
  lane_free_.notify_all();
}

}  // namespace gmmscore
