// DeviceRouter: which device (GPU) a new stream or Score request is scored
// on, when a daemon runs one BatchScheduler per device (--devices). A plan
// can go only where every one of its models has a replica (a fused plan is
// fused on one device); among those devices it goes to the least loaded, and
// a stream stays there (it holds its DeviceAssignment) unless the device
// faults (Move, below).
//
//   DeviceRouter router({scheduler0, scheduler1}, {"cuda:0", "cuda:1"});
//   GMM_ASSIGN_OR_RETURN(DeviceAssignment where, router.Assign(plan.models));
//   plan.device = where.device();  ... router.scheduler(where.device())->Submit(...)
//   scheduler_options.on_group = [&](const GroupReport& r) { router.ObserveGroup(d, r); };
//
// A device whose scheduler refuses new work (BatchScheduler::Overloaded) is
// passed over while another holding the models does not.
// Load, compared in this order (ChooseLeastLoaded):
//   1. the streams and requests assigned to it now, each weighted by its
//      plan's model count: streams live for minutes and send at a steady
//      rate, so what is assigned predicts the load to come, while a queue
//      seen at one instant does not (a burst of opens sees the same queue);
//   2. frames waiting in its scheduler's queue now;
//   3. its recent backend time (scoring seconds, decayed over
//      kBusyHalfLife): a device slower than its peers, or one shared with
//      another process, scores the same work in more time;
//   4. the lower index.
//
// Health: a device whose backend failed kFailuresToMarkFailing dispatches in
// a row with a device fault (IsDeviceFault: INTERNAL, UNAVAILABLE, UNKNOWN,
// DATA_LOSS; a CUDA error, a lost GPU) is failing: new streams go to its
// healthy peers. One whose models are only on failing devices is still
// placed there (fail open): refusing would gain nothing, as there is no
// peer, and would turn a fault of one model's kernel, or a passing one,
// into an outage of every model on the device; the stream then gets the
// device's own error if it persists. Any successful backend call on it (a
// stream still there, or DeviceProber's probe) makes it healthy again. Bad
// input (INVALID_ARGUMENT) and full queues say nothing about the device.
// A stream leaves its device (Move) when one of its chunks fails there with
// a device fault, or when it sends a chunk while the device is failing, if a
// healthy peer holds all its models: the chunk is scored there instead, and
// the client sees nothing (StreamScoreSession; a unary Score request
// likewise). With no such peer it stays, and its chunks get the device's
// error.
//
// Thread safety: all methods are thread-safe; a DeviceAssignment may be
// released on any thread, and may outlive the router.
#ifndef GMMSCORE_SERVER_DEVICE_ROUTER_H_
#define GMMSCORE_SERVER_DEVICE_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/batch_scheduler.h"
#include "server/model_repository.h"

namespace gmmscore {

// Errors that say the device, not the request, is at fault.
bool IsDeviceFault(const absl::Status& status);

// One device's health, as the router judges it.
struct DeviceHealth {
  bool failing = false;
  // Dispatches in a row whose backend calls all failed with a device fault.
  int consecutive_failures = 0;
  // Such dispatches (and failed probes) since the start.
  int64_t failed_dispatches = 0;
  // The last device fault ("" before the first).
  std::string last_error;
  absl::Time failing_since = absl::InfinitePast();
};

// One device's load, as the router compares it.
struct DeviceLoad {
  int64_t assigned_weight = 0;
  int64_t queued_frames = 0;
  double recent_busy_seconds = 0;
};

// The least loaded of `candidates` (indexes into `loads`, at least one),
// by the order in the header comment.
int ChooseLeastLoaded(const std::vector<int>& candidates, const std::vector<DeviceLoad>& loads);

// The devices, of `num_devices`, on which every one of `models` has a
// replica, ascending. FAILED_PRECONDITION when there is none, naming each
// model's devices by `device_names`: a stream's models are scored, and
// fused, on one device.
absl::StatusOr<std::vector<int>> CommonDevices(
    const std::vector<std::shared_ptr<const ServedModel>>& models,
    const std::vector<std::string>& device_names);

// A stream's or request's place on a device: counted in the device's
// assigned weight until destroyed. Movable; a default one holds nothing.
class DeviceAssignment {
 public:
  DeviceAssignment() = default;
  DeviceAssignment(int device, int64_t weight, std::shared_ptr<std::atomic<int64_t>> counter);
  ~DeviceAssignment();
  DeviceAssignment(DeviceAssignment&& other) noexcept;
  DeviceAssignment& operator=(DeviceAssignment&& other) noexcept;
  DeviceAssignment(const DeviceAssignment&) = delete;
  DeviceAssignment& operator=(const DeviceAssignment&) = delete;

  int device() const { return device_; }

 private:
  void Release();

  int device_ = 0;
  int64_t weight_ = 0;
  std::shared_ptr<std::atomic<int64_t>> counter_;
};

class DeviceRouter {
 public:
  // How fast recent backend time is forgotten.
  static constexpr absl::Duration kBusyHalfLife = absl::Seconds(2);
  // Failed dispatches in a row that make a device failing: one CUDA error
  // may be a passing fault; three in a row, with nothing scored between,
  // is a device that cannot serve.
  static constexpr int kFailuresToMarkFailing = 3;

  // schedulers[d] scores device d (named names[d]); all must outlive the
  // router; the same number of each, at least one.
  DeviceRouter(std::vector<BatchScheduler*> schedulers, std::vector<std::string> names);

  // The least loaded healthy device holding every model of `models` (the
  // least loaded failing one when every one holding them is failing),
  // assigned (its weight: the model count) until the result is destroyed.
  // CommonDevices' error when no device holds them all.
  absl::StatusOr<DeviceAssignment> Assign(const std::vector<std::shared_ptr<const ServedModel>>& models);
  // A new place for a stream leaving device `tried.back()` after a device
  // fault: the least loaded healthy device holding every one of `models`
  // and not in `tried` (every device its failing work was tried on, so
  // that a retry never bounces back to one not yet marked failing),
  // counted as a move from tried.back(). NOT_FOUND when there is none (no
  // other device holds them all, or every one that does is failing or
  // tried): the stream stays where it is. CommonDevices' error as Assign.
  absl::StatusOr<DeviceAssignment> Move(const std::vector<std::shared_ptr<const ServedModel>>& models,
                                        const std::vector<int>& tried);
  // Streams and requests moved off `device` since the start.
  int64_t moves_from(int device) const { return moves_from_[device]->load(std::memory_order_relaxed); }

  // A backend call scored on `device` (its score_time counts as busy time).
  void ObserveGroup(int device, const GroupReport& report);
  // A dispatch's (or a probe's) backend outcome on `device`
  // (BatchSchedulerOptions::on_backend_outcome): OK heals it, a device fault
  // counts towards failing, other errors say nothing.
  void ObserveBackend(int device, const absl::Status& outcome);
  // Called, with no router lock held, after a device turned failing or
  // healthy (each transition once). Transitions before it is set are not
  // reported: read the state once after setting it. Empty: none.
  void SetHealthListener(std::function<void()> listener);

  DeviceHealth health(int device) const;
  // Lock-free (asked for every chunk of every stream).
  bool failing(int device) const { return failing_[device]->load(std::memory_order_acquire); }
  // Failing devices now, ascending.
  std::vector<int> FailingDevices() const;

  int num_devices() const { return static_cast<int>(schedulers_.size()); }
  BatchScheduler* scheduler(int device) const { return schedulers_[device]; }
  const std::string& name(int device) const { return names_[device]; }
  const std::vector<std::string>& names() const { return names_; }
  // Now, for metrics and GetServerStats.
  DeviceLoad load(int device) const;
  // Every scheduler's counters summed (the peaks: the largest of any).
  BatchSchedulerStats TotalStats() const;

 private:
  struct Busy {
    double seconds = 0;  // decayed to `at`
    absl::Time at = absl::InfinitePast();
  };
  // `busy` decayed from its time to `now`.
  static double DecayedTo(const Busy& busy, absl::Time now);
  // The least loaded of `candidates` (at least one), assigned `weight`.
  DeviceAssignment AssignAmong(const std::vector<int>& candidates, int64_t weight);
  // Those of `devices` not failing; all of them when every one is.
  std::vector<int> PreferHealthy(const std::vector<int>& devices) const;

  const std::vector<BatchScheduler*> schedulers_;
  const std::vector<std::string> names_;
  std::vector<std::shared_ptr<std::atomic<int64_t>>> assigned_;  // per device
  std::vector<std::unique_ptr<std::atomic<int64_t>>> moves_from_;  // per device
  std::vector<std::unique_ptr<std::atomic<bool>>> failing_;        // health_[d].failing, per device
  absl::Mutex assign_mu_;  // one Assign chooses at a time
  mutable absl::Mutex mu_;
  std::vector<Busy> busy_ ABSL_GUARDED_BY(mu_);  // per device
  std::vector<DeviceHealth> health_ ABSL_GUARDED_BY(mu_);  // per device
  absl::Mutex listener_mu_;
  std::function<void()> listener_ ABSL_GUARDED_BY(listener_mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_DEVICE_ROUTER_H_
