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

absl::StatusOr<AnswerHead> LazyStreamAnswer::Head() const {
  grpc::ByteBuffer view = bytes;  // shares the slices
  grpc::ProtoBufferReader reader(&view);
  google::protobuf::io::CodedInputStream input(&reader);
  AnswerHead head;
  for (;;) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) {
      if (!input.ConsumedEntireMessage()) break;
      return head;
    }
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const WireFormatLite::WireType wire = WireFormatLite::GetTagWireType(tag);
    if (field == v1::StreamScoreResponse::kFirstFrameFieldNumber &&
        wire == WireFormatLite::WIRETYPE_VARINT) {
      if (!input.ReadVarint64(&head.first_frame)) break;
    } else if (field == v1::StreamScoreResponse::kTimingFieldNumber &&
               wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!head.timing.has_value()) head.timing.emplace();
      if (!WireFormatLite::ReadMessage(&input, &*head.timing)) break;
    } else if (!WireFormatLite::SkipField(&input, tag)) {
      break;  // the scores and the rest are skipped, never copied
    }
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
