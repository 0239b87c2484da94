// DecodedMessage<M>: a request message as gRPC read it off the wire, with
// the outcome of decoding it, so that the service (not gRPC) answers bytes
// that are not an M.
//
//   grpc::ServerBidiReactor<DecodedMessage<v1::StreamScoreRequest>, ...>
//   if (!request.status.ok()) return request.status;   // INVALID_ARGUMENT
//   ... request.message ...
//
// Why: gRPC reports a message that fails to parse as a failed read, which a
// stream cannot tell from the client's half-close. An undecodable
// StreamScore message therefore ended the stream with OK and the chunks
// after it were silently dropped, and unary Score answered UNIMPLEMENTED
// with no message (issue 16). Decoding through this type always "succeeds"
// for gRPC and leaves the verdict to the service.
#ifndef GMMSCORE_SERVER_DECODED_MESSAGE_H_
#define GMMSCORE_SERVER_DECODED_MESSAGE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"

namespace gmmscore {

template <class M>
struct DecodedMessage {
  M message;
  // INVALID_ARGUMENT naming the type and size when the bytes did not parse
  // (then `message` is unspecified).
  absl::Status status;
};

}  // namespace gmmscore

namespace grpc {

template <class M>
class SerializationTraits<gmmscore::DecodedMessage<M>, void> {
 public:
  static Status Serialize(const gmmscore::DecodedMessage<M>& in, ByteBuffer* buffer,
                          bool* own_buffer) {
    return SerializationTraits<M>::Serialize(in.message, buffer, own_buffer);
  }
  static Status Deserialize(ByteBuffer* buffer, gmmscore::DecodedMessage<M>* out) {
    const size_t bytes = buffer == nullptr ? 0 : buffer->Length();
    const Status parsed = SerializationTraits<M>::Deserialize(buffer, &out->message);
    out->status = parsed.ok() ? absl::OkStatus()
                              : absl::InvalidArgumentError(absl::StrFormat(
                                    "a message of %d bytes is not a valid %s (protobuf decoding "
                                    "failed); the client sent corrupt or mismatched bytes",
                                    bytes, M::descriptor()->full_name()));
    return Status::OK;
  }
};

}  // namespace grpc

#endif  // GMMSCORE_SERVER_DECODED_MESSAGE_H_
