#include "server/server_stats.h"

#include <sys/resource.h>

namespace gmmscore {
namespace {

uint64_t Micros(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Microseconds(d)); }

uint64_t ProcessCpuMicros() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto micros = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

}  // namespace

std::vector<DeviceCounters> DeviceCountersOf(const DeviceRouter& router) {
  std::vector<DeviceCounters> out;
  for (int d = 0; d < router.num_devices(); ++d) {
    out.push_back({.device = router.name(d),
                   .load = router.load(d),
                   .scheduler = router.scheduler(d)->stats(),
                   .health = router.health(d),
                   .pinned = router.scheduler(d)->backend()->pinned_scores()});
  }
  return out;
}

void FillServerStats(const ServerCounters& counters, v1::GetServerStatsResponse* out) {
  const BatchSchedulerStats& s = counters.scheduler;
  out->set_uptime_us(Micros(counters.uptime));
  out->set_process_cpu_us(ProcessCpuMicros());
  out->set_device(counters.device);
  out->set_streams_started(counters.streams_started);
  out->set_live_streams(counters.live_streams);
  out->set_jobs(s.jobs);
  out->set_frames(s.frames);
  out->set_dispatches(s.dispatches);
  out->set_batches(s.group_calls);
  out->set_max_batch_jobs(s.max_group_jobs);
  out->set_max_batch_frames(s.max_group_frames);
  out->set_queued_jobs(s.queued_jobs);
  out->set_running_batches(s.running_groups);
  out->set_queue_wait_us(Micros(s.queue_wait));
  out->set_worker_wait_us(Micros(s.worker_wait));
  out->set_pack_us(Micros(s.pack_time));
  out->set_score_us(Micros(s.score_time));
  out->set_answer_us(Micros(s.done_time));
  out->set_answers_sent(counters.answers.answers);
  out->set_send_wait_us(Micros(counters.answers.wait));
  out->set_send_us(Micros(counters.answers.send));
  const AdaptationCounters& a = counters.adaptation;
  out->set_adaptation_gathered_frames(a.gathered_frames);
  out->set_adaptation_device_gathered_frames(a.device_gathered_frames);
  out->set_adaptation_skipped_frames(a.skipped_frames);
  out->set_adaptation_updates(a.updates);
  out->set_adaptation_gather_us(a.gather_us);
  out->set_adaptation_update_us(a.update_us);
  out->set_audio_streams(counters.audio.streams);
  out->set_audio_samples(counters.audio.samples);
  out->set_audio_frames(counters.audio.frames);
  out->set_audio_front_end_us(counters.audio.front_end_us);
  for (const DeviceCounters& d : counters.devices) {
    v1::DeviceStats* device = out->add_devices();
    device->set_device(d.device);
    device->set_assigned_weight(static_cast<uint64_t>(d.load.assigned_weight));
    device->set_jobs(d.scheduler.jobs);
    device->set_frames(d.scheduler.frames);
    device->set_batches(d.scheduler.group_calls);
    device->set_queued_frames(d.scheduler.queued_frames);
    device->set_score_us(Micros(d.scheduler.score_time));
    device->set_rejected_jobs(d.scheduler.rejected_jobs);
    device->set_failing(d.health.failing);
    device->set_failed_dispatches(static_cast<uint64_t>(d.health.failed_dispatches));
    device->set_last_error(d.health.last_error);
    device->set_pinned_scores_bytes(static_cast<uint64_t>(d.pinned.held_bytes));
    device->set_pinned_scores_in_use_bytes(static_cast<uint64_t>(d.pinned.in_use_bytes));
    device->set_pinned_scores_refusals(static_cast<uint64_t>(d.pinned.refusals));
  }
}

}  // namespace gmmscore
