// ServerBreakdown: where the server's time went between two GetServerStats
// snapshots (scorer.proto), per job and per batch, to print beside the
// client's own latency.
//
//   v1::GetServerStatsResponse before = ..., after = ...;
//   ServerBreakdown b = DiffServerStats(before, after);
//   // b.queue_wait_ms: mean wait of a chunk before its batch was dispatched
//
// Thread safety: pure functions.
#ifndef GMMSCORE_CLIENT_LOAD_SERVER_BREAKDOWN_H_
#define GMMSCORE_CLIENT_LOAD_SERVER_BREAKDOWN_H_

#include <cstdint>
#include <string>

#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore::load {

struct ServerBreakdown {
  std::string device;
  double seconds = 0;    // between the snapshots (server clock)
  double cpu_cores = 0;  // process CPU time / seconds
  int64_t jobs = 0, batches = 0, frames = 0, streams_started = 0;
  double frames_per_batch = 0;
  double jobs_per_batch = 0;
  // Per job (mean): waiting for dispatch, then for a worker; the answer
  // callback (fusion, message building, handing to gRPC).
  double queue_wait_ms = 0, worker_wait_ms = 0, answer_ms = 0;
  // Per batch (mean): packing frames, the backend call, splitting results.
  double pack_ms = 0, score_ms = 0;
  // Share of the wall time a backend call was running (> 1 when the
  // scheduler's workers overlap calls).
  double backend_busy = 0;
  // Mean time a job spent inside the server's scheduler: queue_wait +
  // worker_wait + pack + score + split + answer. The client's mean latency
  // minus this is gRPC, the network, the reactor and the client.
  double in_scheduler_ms = 0;
  // StreamScore answers sent, and per answer (mean): the wait for the
  // stream's earlier answers to be sent, then gRPC's sending (through the
  // client's HTTP/2 receive window). 0 from servers without these counters.
  int64_t answers = 0;
  double send_wait_ms = 0, send_ms = 0;
  // Live adaptation: frames gathered and skipped, updates, and the cores
  // its workers kept busy (gathering + estimating, off the scoring path).
  int64_t adapted_frames = 0, adaptation_skipped = 0, adaptation_updates = 0;
  double adaptation_cores = 0;
  // Audio streams: feature frames their front ends gave, and the cores spent there.
  int64_t audio_frames = 0;
  double front_end_cores = 0;
};

ServerBreakdown DiffServerStats(const v1::GetServerStatsResponse& before,
                                const v1::GetServerStatsResponse& after);

// One line: "server [cpu]: 1.31 cores busy; 412 batches of 48.2 frames (4.8 jobs);
// per job queue 0.41 + worker 0.02 + answer 0.03 ms; per batch pack 0.01 +
// score 1.20 + split 0.01 ms; backend busy 49%; per answer send wait 0.01 + send 0.20 ms"
// (the last part only when answers were sent).
std::string FormatBreakdown(const ServerBreakdown& b);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_SERVER_BREAKDOWN_H_
