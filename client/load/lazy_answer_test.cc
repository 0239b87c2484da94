#include "client/load/lazy_answer.h"

#include <string>
#include <vector>

#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"

namespace gmmscore::load {
namespace {

// `bytes` cut into slices of at most `slice` bytes, as gRPC may hand them.
LazyStreamAnswer AnswerOf(const std::string& bytes, size_t slice) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice) {
    slices.emplace_back(bytes.substr(at, slice));
  }
  LazyStreamAnswer answer;
  // Twice into one answer, as a stream's reads are, each buffer Release()d
  // after as gRPC does (call_op_set.h): the sanitizer pass's leak checker
  // sees a buffer that was left behind.
  for (int read = 0; read < 2; ++read) {
    grpc::ByteBuffer buffer(slices.data(), slices.size());
    EXPECT_TRUE((grpc::SerializationTraits<LazyStreamAnswer>::Deserialize(&buffer, &answer).ok()));
    buffer.Release();
  }
  return answer;
}

v1::StreamScoreResponse Scored(uint64_t first_frame, int frames, int states) {
  v1::StreamScoreResponse response;
  response.set_first_frame(first_frame);
  v1::StateScores* scores = response.add_scores();
  scores->set_model("big");
  scores->set_num_frames(frames);
  scores->set_num_states(states);
  for (int i = 0; i < frames * states; ++i) scores->add_loglikes(-0.5f * i);
  response.mutable_adaptation()->set_version(3);
  return response;
}

TEST(LazyStreamAnswerTest, TheHeadIsReadWithoutParsingTheScores) {
  for (uint64_t first_frame : {uint64_t{0}, uint64_t{10}, uint64_t{123456789}, uint64_t{1} << 40}) {
    for (bool timed : {false, true}) {
      v1::StreamScoreResponse response = Scored(first_frame, 10, 500);
      if (timed) {
        response.mutable_timing()->set_chunk_read_unix_us(int64_t{1796000000} * 1000000 + first_frame);
        response.mutable_timing()->set_held_us(static_cast<int64_t>(first_frame % 100000));
      }
      const std::string bytes = response.SerializeAsString();
      for (size_t slice : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
        const LazyStreamAnswer answer = AnswerOf(bytes, slice);
        EXPECT_EQ(answer.bytes.Length(), bytes.size());
        absl::StatusOr<AnswerHead> head = answer.Head();
        ASSERT_TRUE(head.ok()) << head.status();
        EXPECT_EQ(head->first_frame, first_frame) << "slices of " << slice;
        ASSERT_EQ(head->timing.has_value(), timed) << "slices of " << slice;
        if (timed) EXPECT_EQ(head->timing->SerializeAsString(), response.timing().SerializeAsString());
        // Reading does not consume: again, and then the whole message.
        EXPECT_EQ(answer.Head()->first_frame, first_frame);
        v1::StreamScoreResponse parsed;
        ASSERT_TRUE(answer.Parse(&parsed).ok());
        EXPECT_EQ(parsed.SerializeAsString(), bytes);
      }
    }
  }
}

// Protobuf allows fields in any order and repeats (two messages' bytes
// concatenated merge into one): the head is what a parse would give.
TEST(LazyStreamAnswerTest, TheHeadIsWhatAParseWouldGiveInAnyOrder) {
  v1::StreamScoreResponse scores_only = Scored(0, 3, 4);
  v1::StreamScoreResponse frame_only;
  frame_only.set_first_frame(70);
  v1::StreamScoreResponse read_at;
  read_at.set_first_frame(80);
  read_at.mutable_timing()->set_chunk_read_unix_us(5);
  v1::StreamScoreResponse held;
  held.mutable_timing()->set_held_us(9);
  const std::string bytes = read_at.SerializeAsString() + scores_only.SerializeAsString() +
                            held.SerializeAsString() + frame_only.SerializeAsString();
  v1::StreamScoreResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  const LazyStreamAnswer answer = AnswerOf(bytes, 5);
  absl::StatusOr<AnswerHead> head = answer.Head();
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->first_frame, parsed.first_frame());
  EXPECT_EQ(head->first_frame, 70u);
  ASSERT_TRUE(head->timing.has_value());
  EXPECT_EQ(head->timing->chunk_read_unix_us(), 5);
  EXPECT_EQ(head->timing->held_us(), 9);
}

TEST(LazyStreamAnswerTest, BytesThatAreNotAnAnswerAreRefused) {
  // Cut inside the scores, a varint that never ends, a tag of wire type 7
  // (none such), and times that are not a ServerTiming.
  const std::string scores = Scored(20, 10, 50).SerializeAsString();
  const std::string truncated = scores.substr(0, scores.size() / 2);
  const std::string bad_timing = std::string("\x32\x02\x08", 3) + "\xff";
  for (const std::string& bad : {truncated, std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11),
                                 std::string("\x0f", 1), bad_timing}) {
    const LazyStreamAnswer answer = AnswerOf(bad, 3);
    EXPECT_EQ(answer.Head().status().code(), absl::StatusCode::kInvalidArgument) << bad.size();
    v1::StreamScoreResponse parsed;
    EXPECT_EQ(answer.Parse(&parsed).code(), absl::StatusCode::kInvalidArgument) << bad.size();
  }
  // An empty answer is a message of defaults.
  const LazyStreamAnswer empty = AnswerOf("", 1);
  EXPECT_EQ(empty.bytes.Length(), 0u);
  EXPECT_EQ(empty.Head()->first_frame, 0u);
  EXPECT_FALSE(empty.Head()->timing.has_value());
}

}  // namespace
}  // namespace gmmscore::load
