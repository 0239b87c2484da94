// LazyStreamAnswer: a StreamScore answer as gmmscore-load reads it off the
// wire: its bytes, kept as gRPC received them (no copy), with first_frame
// and the server's times read by skipping over the other top-level fields,
// and the whole message parsed only for the answers the verifier samples.
//
// Why: a case (a) answer carries 10 x 5000 float32 scores (200 KB). Parsing
// every one into a StreamScoreResponse copied them all and cost the load
// generator more CPU than the daemon spent building them, so on one host the
// generator, not the server, was the limit (docs/PERFORMANCE.md, issue 23).
//
//   grpc::ClientBidiReactor<v1::StreamScoreRequest, LazyStreamAnswer>
//   absl::StatusOr<AnswerHead> head = answer.Head();
//   if (sampled) GMM_RETURN_IF_ERROR(answer.Parse(&response));
//
// Thread safety: as a plain value; Head and Parse are const and do not
// consume the bytes.
#ifndef GMMSCORE_CLIENT_LOAD_LAZY_ANSWER_H_
#define GMMSCORE_CLIENT_LOAD_LAZY_ANSWER_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"
#include "grpcpp/impl/codegen/serialization_traits.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"

namespace gmmscore::load {

// What gmmscore-load reads of every answer.
struct AnswerHead {
  uint64_t first_frame = 0;  // 0 when the field is absent, as protobuf leaves a zero
  // Present when the stream asked for it (OutputOptions.server_timing).
  std::optional<v1::ServerTiming> timing;
};

struct LazyStreamAnswer {
  LazyStreamAnswer() = default;
  LazyStreamAnswer(const LazyStreamAnswer&) = default;  // shares the slices
  LazyStreamAnswer& operator=(const LazyStreamAnswer&) = default;
  // grpc::ByteBuffer (gRPC 1.51) has no move: without these a move would be
  // a copy, an allocation where a verifier's queue holds its lock.
  LazyStreamAnswer(LazyStreamAnswer&& other) noexcept { bytes.Swap(&other.bytes); }
  LazyStreamAnswer& operator=(LazyStreamAnswer&& other) noexcept {
    bytes.Swap(&other.bytes);
    return *this;
  }

  grpc::ByteBuffer bytes;

  // The answer's first_frame and times, the scores skipped, never copied
  // (fields as protobuf merges them: the last first_frame, the timings
  // merged); INVALID_ARGUMENT when the bytes are not a message.
  absl::StatusOr<AnswerHead> Head() const;
  // The whole message into *out.
  absl::Status Parse(v1::StreamScoreResponse* out) const;
};

}  // namespace gmmscore::load

namespace grpc {

// Read only: the load generator never sends an answer.
template <>
class SerializationTraits<gmmscore::load::LazyStreamAnswer, void> {
 public:
  static Status Serialize(const gmmscore::load::LazyStreamAnswer& in, ByteBuffer* buffer,
                          bool* own_buffer) {
    *buffer = in.bytes;
    *own_buffer = true;
    return Status::OK;
  }
  // Takes the received buffer over as gRPC's own ByteBuffer traits do: gRPC
  // Release()s `buffer` afterwards without destroying what it points to, so
  // whatever is left there leaks (a Swap once left the previous answer
  // there: 200 KB leaked per answer).
  static Status Deserialize(ByteBuffer* buffer, gmmscore::load::LazyStreamAnswer* out) {
    return SerializationTraits<ByteBuffer>::Deserialize(buffer, &out->bytes);
  }
};

}  // namespace grpc

#endif  // GMMSCORE_CLIENT_LOAD_LAZY_ANSWER_H_
