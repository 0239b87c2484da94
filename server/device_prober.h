// DeviceProber: the way back for a failing device (DeviceRouter). No stream
// is placed on a failing device, so once its streams have gone nothing
// would ever be scored there again to show it recovered. Every `interval`
// this probes each failing device (ProbeDevice: one frame scored on that
// device's backend) and reports the outcome to the router, which heals the
// device on success and keeps it failing, with the new error, otherwise.
//
//   DeviceProber prober(&router, [&](int d) { return ProbeDevice(*backends[d], repository, d); },
//                       absl::Seconds(5));
//   ...
//   prober.Stop();  // or the destructor
//
// A CUDA context with a sticky error (an illegal address, an uncorrectable
// ECC error) never recovers in this process: its device stays failing, the
// model's health reads NOT_SERVING where it has no other replica, and the
// operator's restart (or Kubernetes' liveness probe on the overall status,
// NOT_SERVING once every device fails) brings it back.
//
// Thread safety: Stop() may be called from any thread, more than once.
#ifndef GMMSCORE_SERVER_DEVICE_PROBER_H_
#define GMMSCORE_SERVER_DEVICE_PROBER_H_

#include <cstdint>
#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kernels/score/scoring_backend.h"
#include "server/device_router.h"
#include "server/model_repository.h"
#include "server/periodic_thread.h"

namespace gmmscore {

// Scores one frame of zeros with the smallest model placed on `device`, on
// `backend` (the device's): OK when it scored, the backend's error if not.
// FAILED_PRECONDITION when no model is placed there (which leaves a failing
// device failing: nothing vouches for it until a model is placed there).
// A fault of one model's kernel is not seen by a probe with another: the
// device heals, and fails again after its next failed dispatches.
absl::Status ProbeDevice(ScoringBackend& backend, const ModelRepository& repository, int device);

class DeviceProber {
 public:
  using Probe = std::function<absl::Status(int device)>;

  // `router` must outlive the prober. An `interval` <= 0 starts nothing.
  DeviceProber(DeviceRouter* router, Probe probe, absl::Duration interval);
  ~DeviceProber();

  DeviceProber(const DeviceProber&) = delete;
  DeviceProber& operator=(const DeviceProber&) = delete;

  // Joins the thread; no probe runs after it returns.
  void Stop() { ticker_.Stop(); }

  // Probes run so far.
  int64_t probes() const { return probes_.load(std::memory_order_relaxed); }

 private:
  // Each failing device once, its outcome to the router.
  void ProbeFailing();

  DeviceRouter* const router_;
  const Probe probe_;
  std::atomic<int64_t> probes_{0};
  PeriodicThread ticker_;  // last: its thread starts once the others exist
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_DEVICE_PROBER_H_
