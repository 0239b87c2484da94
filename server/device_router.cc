#include "server/device_router.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/log.h"

namespace gmmscore {

int ChooseLeastLoaded(const std::vector<int>& candidates, const std::vector<DeviceLoad>& loads) {
  auto key = [&](int d) {
    const DeviceLoad& l = loads[d];
    return std::make_tuple(l.assigned_weight, l.queued_frames, l.recent_busy_seconds, d);
  };
  int best = candidates.front();
  for (int d : candidates) {
    if (key(d) < key(best)) best = d;
  }
  return best;
}

absl::StatusOr<std::vector<int>> CommonDevices(
    const std::vector<std::shared_ptr<const ServedModel>>& models,
    const std::vector<std::string>& device_names) {
  std::vector<int> common;
  for (size_t d = 0; d < device_names.size(); ++d) {
    bool everywhere = true;
    for (const auto& model : models) everywhere = everywhere && model->replica(static_cast<int>(d)) != nullptr;
    if (everywhere) common.push_back(static_cast<int>(d));
  }
  if (!common.empty()) return common;
  std::vector<std::string> where;
  for (const auto& model : models) {
    std::vector<std::string> names;
    for (int d : model->devices()) {
      names.push_back(d < static_cast<int>(device_names.size()) ? device_names[d] : absl::StrCat(d));
    }
    where.push_back(absl::StrFormat("'%s' on %s", model->name, absl::StrJoin(names, ", ")));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "no device holds all of this stream's models (%s): a stream's models are scored, and fused, "
      "on one device; place them together (the server config's models[].devices)",
      absl::StrJoin(where, "; ")));
}

bool IsDeviceFault(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

DeviceAssignment::DeviceAssignment(int device, int64_t weight,
                                   std::shared_ptr<std::atomic<int64_t>> counter)
    : device_(device), weight_(weight), counter_(std::move(counter)) {}

DeviceAssignment::~DeviceAssignment() { Release(); }

DeviceAssignment::DeviceAssignment(DeviceAssignment&& other) noexcept
    : device_(other.device_), weight_(other.weight_), counter_(std::move(other.counter_)) {}

DeviceAssignment& DeviceAssignment::operator=(DeviceAssignment&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = other.device_;
    weight_ = other.weight_;
    counter_ = std::move(other.counter_);
  }
  return *this;
}

void DeviceAssignment::Release() {
  if (counter_ != nullptr) counter_->fetch_sub(weight_, std::memory_order_relaxed);
  counter_ = nullptr;
}

DeviceRouter::DeviceRouter(std::vector<BatchScheduler*> schedulers, std::vector<std::string> names)
    : schedulers_(std::move(schedulers)),
      names_(std::move(names)),
      busy_(schedulers_.size()),
      health_(schedulers_.size()) {
  for (size_t d = 0; d < schedulers_.size(); ++d) {
    assigned_.push_back(std::make_shared<std::atomic<int64_t>>(0));
    moves_from_.push_back(std::make_unique<std::atomic<int64_t>>(0));
    failing_.push_back(std::make_unique<std::atomic<bool>>(false));
  }
}

double DeviceRouter::DecayedTo(const Busy& busy, absl::Time now) {
  if (busy.at == absl::InfinitePast() || now <= busy.at) return busy.seconds;
  return busy.seconds * std::exp2(-absl::FDivDuration(now - busy.at, kBusyHalfLife));
}

DeviceLoad DeviceRouter::load(int device) const {
  DeviceLoad load;
  load.assigned_weight = assigned_[device]->load(std::memory_order_relaxed);
  load.queued_frames = schedulers_[device]->stats().queued_frames;
  absl::MutexLock lock(&mu_);
  load.recent_busy_seconds = DecayedTo(busy_[device], absl::Now());
  return load;
}

absl::StatusOr<DeviceAssignment> DeviceRouter::Assign(
    const std::vector<std::shared_ptr<const ServedModel>>& models) {
  absl::StatusOr<std::vector<int>> holding = CommonDevices(models, names_);
  if (!holding.ok()) return holding.status();
  return AssignAmong(PreferHealthy(*holding), static_cast<int64_t>(models.size()));
}

absl::StatusOr<DeviceAssignment> DeviceRouter::Move(
    const std::vector<std::shared_ptr<const ServedModel>>& models, const std::vector<int>& tried) {
  absl::StatusOr<std::vector<int>> holding = CommonDevices(models, names_);
  if (!holding.ok()) return holding.status();
  const int leaving = tried.back();
  std::vector<int> healthy;
  for (int d : *holding) {
    if (!failing(d) && std::find(tried.begin(), tried.end(), d) == tried.end()) healthy.push_back(d);
  }
  if (healthy.empty()) {
    return absl::NotFoundError(absl::StrFormat(
        "no healthy device not yet tried (last %d, %s) holds all of the stream's models", leaving,
        names_[leaving]));
  }
  moves_from_[leaving]->fetch_add(1, std::memory_order_relaxed);
  return AssignAmong(healthy, static_cast<int64_t>(models.size()));
}

DeviceAssignment DeviceRouter::AssignAmong(const std::vector<int>& all_candidates, int64_t weight) {
  // A device refusing new work (BatchScheduler::AdmitNew) is passed over
  // while another can take it; when all refuse, the choice is as before and
  // the caller's AdmitNew refuses.
  std::vector<int> candidates;
  for (int d : all_candidates) {
    if (!schedulers_[d]->Overloaded()) candidates.push_back(d);
  }
  if (candidates.empty()) candidates = all_candidates;
  if (candidates.size() == 1) {
    const int device = candidates.front();
    assigned_[device]->fetch_add(weight, std::memory_order_relaxed);
    return DeviceAssignment(device, weight, assigned_[device]);
  }
  std::vector<DeviceLoad> loads(schedulers_.size());
  for (int d : candidates) {
    loads[d].queued_frames = schedulers_[d]->stats().queued_frames;
  }
  // Chosen and counted under one lock, so that streams opening together
  // see each other's choices.
  absl::MutexLock lock(&assign_mu_);
  const absl::Time now = absl::Now();
  {
    absl::MutexLock busy_lock(&mu_);
    for (int d : candidates) loads[d].recent_busy_seconds = DecayedTo(busy_[d], now);
  }
  for (int d : candidates) loads[d].assigned_weight = assigned_[d]->load(std::memory_order_relaxed);
  const int device = ChooseLeastLoaded(candidates, loads);
  assigned_[device]->fetch_add(weight, std::memory_order_relaxed);
  return DeviceAssignment(device, weight, assigned_[device]);
}

void DeviceRouter::ObserveGroup(int device, const GroupReport& report) {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  Busy& busy = busy_[device];
  busy.seconds = DecayedTo(busy, now) + absl::ToDoubleSeconds(report.score_time);
  busy.at = now;
}

std::vector<int> DeviceRouter::PreferHealthy(const std::vector<int>& devices) const {
  std::vector<int> healthy;
  absl::MutexLock lock(&mu_);
  for (int d : devices) {
    if (!health_[d].failing) healthy.push_back(d);
  }
  return healthy.empty() ? devices : healthy;
}

void DeviceRouter::ObserveBackend(int device, const absl::Status& outcome) {
  if (!outcome.ok() && !IsDeviceFault(outcome)) return;
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    DeviceHealth& health = health_[device];
    if (outcome.ok()) {
      health.consecutive_failures = 0;
      changed = health.failing;
      health.failing = false;
      failing_[device]->store(false, std::memory_order_release);
    } else {
      ++health.consecutive_failures;
      ++health.failed_dispatches;
      health.last_error = std::string(outcome.message());
      if (!health.failing && health.consecutive_failures >= kFailuresToMarkFailing) {
        health.failing = true;
        failing_[device]->store(true, std::memory_order_release);
        health.failing_since = absl::Now();
        changed = true;
      }
    }
  }
  if (!changed) return;
  if (outcome.ok()) {
    LogInfo("device %d (%s) is healthy again: a backend call succeeded; new streams may go to it",
            device, names_[device]);
  } else {
    LogError("device %d (%s) is failing after %d failed backend calls in a row (last: %s); new "
             "streams go to its healthy peers, and it is probed for recovery",
             device, names_[device], kFailuresToMarkFailing, outcome.ToString());
  }
  absl::MutexLock lock(&listener_mu_);
  if (listener_) listener_();
}

void DeviceRouter::SetHealthListener(std::function<void()> listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

DeviceHealth DeviceRouter::health(int device) const {
  absl::MutexLock lock(&mu_);
  return health_[device];
}

std::vector<int> DeviceRouter::FailingDevices() const {
  std::vector<int> failing;
  absl::MutexLock lock(&mu_);
  for (size_t d = 0; d < health_.size(); ++d) {
    if (health_[d].failing) failing.push_back(static_cast<int>(d));
  }
  return failing;
}

BatchSchedulerStats DeviceRouter::TotalStats() const {
  BatchSchedulerStats total;
  for (const BatchScheduler* scheduler : schedulers_) {
    const BatchSchedulerStats s = scheduler->stats();
    total.dispatches += s.dispatches;
    total.group_calls += s.group_calls;
    total.jobs += s.jobs;
    total.frames += s.frames;
    total.max_group_jobs = std::max(total.max_group_jobs, s.max_group_jobs);
    total.max_group_frames = std::max(total.max_group_frames, s.max_group_frames);
    total.queued_jobs += s.queued_jobs;
    total.running_groups += s.running_groups;
    total.queued_frames += s.queued_frames;
    total.rejected_jobs += s.rejected_jobs;
    total.waited_jobs += s.waited_jobs;
    total.waiting_jobs += s.waiting_jobs;
    total.waiting_frames += s.waiting_frames;
    total.purge_walks += s.purge_walks;
    total.overload_refusals += s.overload_refusals;
    total.cancelled_jobs += s.cancelled_jobs;
    total.expired_jobs += s.expired_jobs;
    total.queue_wait += s.queue_wait;
    total.worker_wait += s.worker_wait;
    total.pack_time += s.pack_time;
    total.score_time += s.score_time;
    total.done_time += s.done_time;
  }
  return total;
}

}  // namespace gmmscore
