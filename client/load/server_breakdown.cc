#include "client/load/server_breakdown.h"

#include "absl/strings/str_format.h"

namespace gmmscore::load {
namespace {

double Ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

ServerBreakdown DiffServerStats(const v1::GetServerStatsResponse& before,
                                const v1::GetServerStatsResponse& after) {
  auto d = [](uint64_t a, uint64_t b) { return static_cast<double>(b) - static_cast<double>(a); };
  ServerBreakdown b;
  b.device = after.device();
  const double us = d(before.uptime_us(), after.uptime_us());
  b.seconds = us * 1e-6;
  b.cpu_cores = Ratio(d(before.process_cpu_us(), after.process_cpu_us()), us);
  b.jobs = static_cast<int64_t>(d(before.jobs(), after.jobs()));
  b.batches = static_cast<int64_t>(d(before.batches(), after.batches()));
  b.frames = static_cast<int64_t>(d(before.frames(), after.frames()));
  b.streams_started = static_cast<int64_t>(d(before.streams_started(), after.streams_started()));
  b.frames_per_batch = Ratio(b.frames, b.batches);
  b.jobs_per_batch = Ratio(b.jobs, b.batches);
  b.queue_wait_ms = Ratio(d(before.queue_wait_us(), after.queue_wait_us()), b.jobs) * 1e-3;
  b.worker_wait_ms = Ratio(d(before.worker_wait_us(), after.worker_wait_us()), b.jobs) * 1e-3;
  b.answer_ms = Ratio(d(before.answer_us(), after.answer_us()), b.jobs) * 1e-3;
  b.pack_ms = Ratio(d(before.pack_us(), after.pack_us()), b.batches) * 1e-3;
  b.score_ms = Ratio(d(before.score_us(), after.score_us()), b.batches) * 1e-3;
  b.backend_busy = Ratio(d(before.score_us(), after.score_us()), us);
  b.answers = static_cast<int64_t>(d(before.answers_sent(), after.answers_sent()));
  b.send_wait_ms = Ratio(d(before.send_wait_us(), after.send_wait_us()), b.answers) * 1e-3;
  b.send_ms = Ratio(d(before.send_us(), after.send_us()), b.answers) * 1e-3;
  b.adapted_frames = static_cast<int64_t>(
      d(before.adaptation_gathered_frames(), after.adaptation_gathered_frames()));
  b.adaptation_skipped = static_cast<int64_t>(
      d(before.adaptation_skipped_frames(), after.adaptation_skipped_frames()));
  b.adaptation_updates =
      static_cast<int64_t>(d(before.adaptation_updates(), after.adaptation_updates()));
  b.adaptation_cores = Ratio(d(before.adaptation_gather_us(), after.adaptation_gather_us()) +
                                 d(before.adaptation_update_us(), after.adaptation_update_us()),
                             us);
  b.audio_frames = static_cast<int64_t>(d(before.audio_frames(), after.audio_frames()));
  b.front_end_cores = Ratio(d(before.audio_front_end_us(), after.audio_front_end_us()), us);
  b.in_scheduler_ms = b.queue_wait_ms + b.worker_wait_ms + b.pack_ms + b.score_ms + b.answer_ms;
  return b;
}

std::string FormatBreakdown(const ServerBreakdown& b) {
  std::string line = absl::StrFormat(
      "server [%s]: %.2f cores busy; %d batches of %.1f frames (%.1f jobs); per job queue %.2f + "
      "worker %.2f + answer %.2f ms; per batch pack %.2f + score %.2f ms; backend busy %.0f%%",
      b.device, b.cpu_cores, b.batches, b.frames_per_batch, b.jobs_per_batch, b.queue_wait_ms,
      b.worker_wait_ms, b.answer_ms, b.pack_ms, b.score_ms, b.backend_busy * 100);
  if (b.answers > 0) {
    absl::StrAppendFormat(&line, "; per answer send wait %.2f + send %.2f ms", b.send_wait_ms,
                          b.send_ms);
  }
  if (b.adapted_frames > 0 || b.adaptation_skipped > 0) {
    absl::StrAppendFormat(&line,
                          "; adaptation %.2f cores: %d frames gathered, %d skipped, %d updates",
                          b.adaptation_cores, b.adapted_frames, b.adaptation_skipped,
                          b.adaptation_updates);
  }
  if (b.audio_frames > 0) {
    absl::StrAppendFormat(&line, "; front end %.2f cores for %d frames of audio", b.front_end_cores,
                          b.audio_frames);
  }
  return line;
}

}  // namespace gmmscore::load
