// The GetServerStats answer (scorer.proto): the scheduler's counters, the
// stream counts and the process's CPU time, in wire form.
//
//   v1::GetServerStatsResponse stats;
//   FillServerStats({.scheduler = scheduler->stats(), .live_streams = ..., ...}, &stats);
//
// Thread safety: a pure function of its arguments.
#ifndef GMMSCORE_SERVER_SERVER_STATS_H_
#define GMMSCORE_SERVER_SERVER_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmmscore/v1/scorer.pb.h"
#include "server/adaptation_hub.h"
#include "server/audio_stream_stats.h"
#include "server/answer_send_stats.h"
#include "server/batch_scheduler.h"
#include "server/device_router.h"

namespace gmmscore {

// One device's scheduler, for GetServerStatsResponse.devices.
struct DeviceCounters {
  std::string device;
  DeviceLoad load;
  BatchSchedulerStats scheduler;
  DeviceHealth health;
  PinnedScoresStats pinned;  // its backend's
};

// Every device of `router`, in order.
std::vector<DeviceCounters> DeviceCountersOf(const DeviceRouter& router);

struct ServerCounters {
  BatchSchedulerStats scheduler;  // all devices together
  std::vector<DeviceCounters> devices;
  AnswerSendTotals answers;
  int64_t live_streams = 0;
  int64_t streams_started = 0;
  absl::Duration uptime;
  std::string device;
  AdaptationCounters adaptation;  // zeros without live adaptation
  AudioCounters audio;
};

// Fills every field of *out from `counters`, plus process_cpu_us from
// getrusage(RUSAGE_SELF).
void FillServerStats(const ServerCounters& counters, v1::GetServerStatsResponse* out);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SERVER_STATS_H_
