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
// - One connection's answers are written by one gRPC transport and read by
//   one client thread at a time. On one machine, one run each: 188 float32
//   streams a connection (375 MB/s of answers) passed at 4.2 ms and 375
//   (750 MB/s) took 27 ms, both at 4500 streams in all; 208 (417 MB/s)
//   failed at 277 ms at 5000 in all, where 53 connections passed at 6.8.
//   How much of that failure is the connection and how much the total load
//   (5000 float32 failed 3 of 3 in stop 53) is not separated.
// So: few connections, each under a byte budget with room to spare, and
// under a stream count that was measured fine for small answers.

#include <cstdint>
#include <vector>

#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore::load {

// Answer bytes a connection is planned to carry a second: a sixth of the
// 375 MB/s that passed. For float32 streams of a 5000-state model that is
// one connection per 32 streams, the default before stop 55.
inline constexpr double kConnectionAnswerBytesPerS = 64e6;
// Streams a connection is planned to carry: 250 to 1000 fast top_k streams
// a connection passed at 3.6-7.7 ms on three machines (stop 55).
inline constexpr int kStreamsPerConnection = 250;
inline constexpr int kMaxConnections = 64;

// The bytes of answers one real-time stream receives a second (100 frames
// a second; a --norealtime stream may receive more), estimated from its
// config and the states of its models (in config.models() order): dense
// matrices are states x 4 bytes a frame (2 with float16), top_k ones at
// most top_k states of 6 bytes (4 with float16: the state id and its
// value). A beam without top_k keeps an unknown number of states and counts
// as dense (a beam that keeps them all costs a third more, with the ids).
// Frame totals, offsets and fusion weights, a few percent, are left out.
double AnswerBytesPerStreamSecond(const v1::StreamConfig& config,
                                  const std::vector<int64_t>& model_states);

// Connections for `streams` streams of `answer_bytes_per_stream_s` each: the
// most of the byte bound and the stream bound, 1 to kMaxConnections.
int DefaultConnections(int streams, double answer_bytes_per_stream_s);

}  // namespace gmmscore::load

#endif  // GMMSCORE_CLIENT_LOAD_CONNECTION_PLAN_H_
