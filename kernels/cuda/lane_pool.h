// Lanes: the CUDA backend's concurrent Score calls per device, each with a
// stream, a cuBLAS handle and the pinned and device buffers a call packs,
// launches and copies through. LanePool hands them out as LaneLease, which
// gives its lane back when it goes out of scope.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<LanePool> lanes, LanePool::Create(device, 4));
//   LaneLease lease = lanes->Acquire();   // waits while every lane is out
//   ... queue copies and launches on lease->stream, synchronise ...
//   lease.MarkIdle();                     // its stream has nothing queued
//
// Why the lease synchronises: a call that fails half-way (a launch refused
// after its copies were queued) leaves work on the stream that still reads
// and writes the lane's buffers. A lease not marked idle waits for its
// stream before the next call may pack into those buffers.
//
// Thread safety: Acquire and leases on any threads.
#ifndef GMMSCORE_KERNELS_CUDA_LANE_POOL_H_
#define GMMSCORE_KERNELS_CUDA_LANE_POOL_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_halves.h"
#include "kernels/cuda/device_selection.h"
#include "kernels/cuda/feature_transform_launch.h"
#include "kernels/cuda/fmllr_gather_launch.h"
#include "kernels/cuda/loglik_launch.h"
#include "kernels/cuda/tied_mixture_device.h"

namespace gmmscore {

// One stream's worth of everything a Score call needs.
struct Lane {
  CudaStream stream;
  CublasHandle cublas;
  LoglikWorkspace gemm;
  TiedMixtureWorkspace tied;
  PinnedBuffer<float> host_in;   // every window's frames, then the packed transforms
  PinnedBuffer<float> host_out;
  DeviceBuffer<float> features;  // a copy of host_in
  DeviceBuffer<float> loglikes;  // T x S, then T frame totals
  // Windows with a speaker transform: their frames transformed on the device
  // into `transformed` (same offsets as in `features`).
  PinnedBuffer<TransformSegment> host_segments;
  DeviceBuffer<TransformSegment> segments;
  DeviceBuffer<float> transformed;
  // Fusion on the device (device_fusion.h): segments, model row pointers and
  // log weights in; fused scores, fused frame totals and per-frame winners out.
  PinnedBuffer<char> fusion_host_in;
  DeviceBuffer<char> fusion_in;
  PinnedBuffer<float> fusion_host_out;
  DeviceBuffer<float> fusion_out;
  // Windows asking for their top_k states: selected on the device.
  DeviceSelection selection;
  // Windows sent in half precision: encoded on the device.
  DeviceHalves halves;
  // Windows gathering fMLLR statistics (fmllr_gather_launch.h): their
  // descriptors, and each frame's terms.
  PinnedBuffer<FmllrGatherWindow> host_gathers;
  DeviceBuffer<FmllrGatherWindow> gathers;
  DeviceBuffer<double> gather_terms;
};

class LanePool;

// A lane, held until the lease goes; move-only.
class LaneLease {
 public:
  LaneLease(LaneLease&& other) noexcept;
  LaneLease& operator=(LaneLease&&) = delete;
  // Synchronises the lane's stream unless MarkIdle was called, then gives
  // the lane back.
  ~LaneLease();

  Lane& operator*() const { return *lane_; }
  Lane* operator->() const { return lane_; }
  // Every operation queued on the stream has completed (the caller
  // synchronised it): the lease need not wait when it goes.
  void MarkIdle() { idle_ = true; }

 private:
  friend class LanePool;
  LaneLease(LanePool* pool, Lane* lane) : pool_(pool), lane_(lane) {}
  LanePool* pool_;
  Lane* lane_;
  bool idle_ = false;
};

class LanePool {
 public:
  // `count` lanes on `device` (the current device when called), cuBLAS in
  // FP32 math as written (no TF32 shortcut in SGEMM).
  static absl::StatusOr<std::unique_ptr<LanePool>> Create(int device, int count);
  // Waits for every lane's stream.
  ~LanePool();

  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // A free lane, waiting while every lane is leased.
  LaneLease Acquire();
  // Lane `index` (0 <= index < size()), waiting while it is leased: for work
  // that must reach every lane (CudaBackend::WarmUp) without holding them all.
  LaneLease AcquireLane(int index);
  int size() const { return static_cast<int>(lanes_.size()); }

 private:
  friend class LaneLease;
  explicit LanePool(int device, int count) : device_(device), lanes_(count) {}
  void Release(Lane* lane);

  const int device_;
  std::vector<Lane> lanes_;  // fixed after Create
  std::mutex mu_;
  std::condition_variable lane_free_;
  std::vector<Lane*> free_lanes_;  // guarded by mu_
  // Lanes an AcquireLane waits for: Acquire leaves them to it, or a caller
  // of Acquire could take each back as soon as it is released.
  std::vector<Lane*> wanted_;  // guarded by mu_
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CUDA_LANE_POOL_H_
