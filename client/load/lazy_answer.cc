#include "client/load/lazy_answer.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace gmmscore::load {

using google::protobuf::internal::WireFormatLite;

namespace {

absl::Status NotAnAnswer(const grpc::ByteBuffer& bytes) {
  return absl::InvalidArgumentError(
      absl::StrCat("an answer of ", bytes.Length(), " bytes is not a StreamScoreResponse"));
}

}  // namespace

absl::StatusOr<uint64_t> LazyStreamAnswer::FirstFrame() const {
  grpc::ByteBuffer view = bytes;  // shares the slices
  grpc::ProtoBufferReader reader(&view);
  google::protobuf::io::CodedInputStream input(&reader);
  for (;;) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) {
      // The end: no first_frame, which protobuf leaves out when it is 0.
      if (!input.ConsumedEntireMessage()) break;
      return 0;
    }
    if (WireFormatLite::GetTagFieldNumber(tag) == v1::StreamScoreResponse::kFirstFrameFieldNumber &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      uint64_t first_frame = 0;
      if (input.ReadVarint64(&first_frame)) return first_frame;
      break;
    }
    // The scores and the rest: skipped, never copied.
    if (!WireFormatLite::SkipField(&input, tag)) break;
  }
  return NotAnAnswer(bytes);
}

absl::Status LazyStreamAnswer::Parse(v1::StreamScoreResponse* out) const {
  grpc::ByteBuffer view = bytes;
  grpc::ProtoBufferReader reader(&view);
  if (!out->ParseFromZeroCopyStream(&reader)) return NotAnAnswer(bytes);
  return absl::OkStatus();
}

}  // namespace gmmscore::load
