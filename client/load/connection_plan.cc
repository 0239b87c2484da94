#include "client/load/connection_plan.h"

#include <algorithm>
#include <cmath>

namespace gmmscore::load {
namespace {

constexpr double kFramesPerSecond = 100;

// Bytes of one frame of one matrix with `states` columns.
double MatrixFrameBytes(int64_t states, const v1::OutputOptions& output) {
  const double value_bytes = output.float16() ? 2 : 4;
  if (output.top_k() > 0) {
    const int64_t kept = std::min<int64_t>(states, output.top_k());
    return static_cast<double>(kept) * (value_bytes + 2);  // value and state id
  }
  return static_cast<double>(states) * value_bytes;
}

}  // namespace

double AnswerBytesPerStreamSecond(const v1::StreamConfig& config,
                                  const std::vector<int64_t>& model_states) {
  const v1::OutputOptions& output = config.output();
  double frame_bytes = 0;
  int64_t widest = 0;
  for (int64_t states : model_states) {
    widest = std::max(widest, states);
    // One model: its matrix is the answer. Several: per-model matrices
    // unless fused_only, and the fused one.
    if (model_states.size() == 1 || !output.fused_only()) {
      frame_bytes += MatrixFrameBytes(states, output);
    }
  }
  if (model_states.size() > 1) frame_bytes += MatrixFrameBytes(widest, output);
  return frame_bytes * kFramesPerSecond;
}

int DefaultConnections(int streams, double answer_bytes_per_stream_s) {
  const double by_bytes =
      std::ceil(streams * std::max(0.0, answer_bytes_per_stream_s) / kConnectionAnswerBytesPerS);
  const int by_streams = (streams + kStreamsPerConnection - 1) / kStreamsPerConnection;
  const double wanted = std::max<double>(by_bytes, by_streams);
  return static_cast<int>(std::clamp<double>(wanted, 1, kMaxConnections));
}

}  // namespace gmmscore::load
