#include "server/adaptation_hub.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/core/thread_name.h"
#include "server/client_text.h"
#include "server/log.h"

namespace gmmscore {

AdaptationHub::AdaptationHub(ModelRepository* repository, const AdaptationLimits& limits)
    : repository_(repository), limits_(limits) {
  const int workers = std::max(1, limits_.workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerMain(); });
}

AdaptationHub::~AdaptationHub() { Stop(); }

void AdaptationHub::Post(absl::AnyInvocable<void() &&> task) {
  if (!TryPost(task)) std::move(task)();  // stopped: nobody else would run it
}

bool AdaptationHub::TryPost(absl::AnyInvocable<void() &&>& task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  tasks_.push_back(std::move(task));
  return true;
}

void AdaptationHub::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void AdaptationHub::WorkerMain() {
  NameCurrentThread("gs-adapt");
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !tasks_.empty(); };
  for (;;) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&ready));
      if (tasks_.empty()) return;  // stopping, and everything queued has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    std::move(task)();
  }
}

absl::Status AdaptationHub::Publish(const std::string& name, SavedAdaptation saved,
                                    std::shared_ptr<const ServedModel> model) {
  if (saved.method == v1::AdaptationConfig::MAP_MEANS) {
    if (absl::Status status = repository_->Publish(name, std::move(model)); !status.ok()) {
      return status;
    }
    saved.model = name;
  }
  absl::MutexLock lock(&saved_mu_);
  saved_[name] = {std::move(saved), ++sequence_};
  if (static_cast<int>(saved_.size()) > std::max(1, limits_.max_saved)) {
    auto oldest = std::min_element(saved_.begin(), saved_.end(), [](const auto& a, const auto& b) {
      return a.second.sequence < b.second.sequence;
    });
    LogInfo("adaptation '%s' forgotten: more than %d names published (--max_saved_adaptations)",
            ClientText(oldest->first), limits_.max_saved);
    saved_.erase(oldest);
  }
  return absl::OkStatus();
}

absl::StatusOr<SavedAdaptation> AdaptationHub::Find(const std::string& name) const {
  absl::MutexLock lock(&saved_mu_);
  auto it = saved_.find(name);
  if (it == saved_.end()) {
    return absl::NotFoundError(absl::StrFormat(
        "no adaptation was published as '%s' (AdaptationConfig.save_as; this server keeps the "
        "%d most recent)",
        ClientText(name), limits_.max_saved));
  }
  return it->second.saved;
}

std::shared_ptr<const FmllrAccumulator> AdaptationHub::FmllrAccumulatorFor(
    const std::shared_ptr<const DiagGmmModel>& model) {
  absl::MutexLock lock(&accumulators_mu_);
  for (auto it = accumulators_.begin(); it != accumulators_.end();) {
    it = it->second.expired() ? accumulators_.erase(it) : std::next(it);
  }
  // Keyed by address: the entry of a model freed and another allocated at
  // its address has expired with the first (its streams held the model).
  std::weak_ptr<const FmllrAccumulator>& entry = accumulators_[model.get()];
  if (std::shared_ptr<const FmllrAccumulator> shared = entry.lock()) return shared;
  auto made = std::make_shared<const FmllrAccumulator>(*model);
  entry = made;
  return made;
}

AdaptationCounters AdaptationHub::counters() const {
  const Counting& c = counting_;
  return {.streams = c.streams.load(),
          .live_streams = c.live_streams.load(),
          .gathered_frames = c.gathered_frames.load(),
          .device_gathered_frames = c.device_gathered_frames.load(),
          .skipped_frames = c.skipped_frames.load(),
          .updates = c.updates.load(),
          .failed_updates = c.failed_updates.load(),
          .gather_us = c.gather_us.load(),
          .update_us = c.update_us.load()};
}

}  // namespace gmmscore
