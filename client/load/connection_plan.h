#ifndef GMMSCORE_CLIENT_LOAD_CONNECTION_PLAN_H_
#define GMMSCORE_CLIENT_LOAD_CONNECTION_PLAN_H_

// How many HTTP/2 connections gmmscore-load spreads a point's streams over
// when --channels is not given.
//
// Two costs pull apart (docs/PERFORMANCE.md, stops 51, 54 and 55, 16-core
// H200 hosts, daemon and generators on one host):
// - Every connection with data costs the daemon's poller a turn: gRPC 1.51
//   reads a process's sockets one at a time, about 40 us each, so 63
//   connections a generator of 2000 fast top_k streams put 14 ms on each
//   chunk's way in where 8 put 0.4-1.1.
// - One connection's answers are written and read by one thread at a time:
//   188 float32 streams a connection (375 MB/s of answers) passed at 4.2 ms,
//   208 (417 MB/s) failed at 277 ms, 375 (750 MB/s) took 27 ms.
// So: few connections, each under a byte budget with room to spare, and
// under a stream count that was measured fine for small answers.

#include <cstdint>
#include <vector>

#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore::load {

// Answer bytes a connection is planned to carry a second: a sixth of the
// 375 MB/s that passed (and a third of 219 MB/s of float16 answers, whose
// one run at 8 connections refused streams at its start).
inline constexpr double kConnectionAnswerBytesPerS = 64e6;
// Streams a connection is planned to carry: 250 to 1000 fast top_k streams
// a connection each passed at 3.6-4.7 ms (stop 55).
inline constexpr int kStreamsPerConnection = 250;
inline constexpr int kMaxConnections = 64;

// The bytes of answers one real-time stream receives a second (100 frames
// a second), estimated from its config and the states of its models (in
// config.models() order): dense matrices are states x 4 bytes a frame (2
// with float16), top_k ones at most top_k states of 6 bytes (4 with
// float16: the state id and its value). A beam without top_k keeps an
// unknown number of states and counts as dense, the upper bound.
double AnswerBytesPerStreamSecond(const v1::StreamConfig& config,
                                  const std::vector<int64_t>& model_states);

// Connections for `streams` streams of `answer_bytes_per_stream_s` each: the
// most of the byte bound and the stream bound, 1 to kMaxConnections.
int DefaultConnections(int streams, double answer_bytes_per_stream_s);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_CONNECTION_PLAN_H_
