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

TEST(LazyStreamAnswerTest, FirstFrameIsReadWithoutParsingTheScores) {
  for (uint64_t first_frame : {uint64_t{0}, uint64_t{10}, uint64_t{123456789}, uint64_t{1} << 40}) {
    const std::string bytes = Scored(first_frame, 10, 500).SerializeAsString();
    for (size_t slice : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
      const LazyStreamAnswer answer = AnswerOf(bytes, slice);
      EXPECT_EQ(answer.bytes.Length(), bytes.size());
      absl::StatusOr<uint64_t> read = answer.FirstFrame();
      ASSERT_TRUE(read.ok()) << read.status();
      EXPECT_EQ(*read, first_frame) << "slices of " << slice;
      // Reading does not consume: again, and then the whole message.
      EXPECT_EQ(*answer.FirstFrame(), first_frame);
      v1::StreamScoreResponse parsed;
      ASSERT_TRUE(answer.Parse(&parsed).ok());
      EXPECT_EQ(parsed.SerializeAsString(), bytes);
    }
  }
}

// Protobuf allows fields in any order: first_frame after the scores (two
// messages' bytes concatenated merge into one) is still found.
TEST(LazyStreamAnswerTest, FirstFrameAfterTheOtherFieldsIsFound) {
  v1::StreamScoreResponse scores_only = Scored(0, 3, 4);
  v1::StreamScoreResponse frame_only;
  frame_only.set_first_frame(70);
  const std::string bytes = scores_only.SerializeAsString() + frame_only.SerializeAsString();
  const LazyStreamAnswer answer = AnswerOf(bytes, 5);
  absl::StatusOr<uint64_t> read = answer.FirstFrame();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, 70u);
}

TEST(LazyStreamAnswerTest, BytesThatAreNotAnAnswerAreRefused) {
  // Cut inside the scores, with first_frame after them (never reached), a
  // varint that never ends, and a tag of wire type 7 (none such).
  v1::StreamScoreResponse frame_only;
  frame_only.set_first_frame(20);
  const std::string scores_then_frame = Scored(0, 10, 50).SerializeAsString() + frame_only.SerializeAsString();
  const std::string truncated = scores_then_frame.substr(0, scores_then_frame.size() / 2);
  for (const std::string& bad : {truncated, std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11),
                                 std::string("\x0f", 1)}) {
    const LazyStreamAnswer answer = AnswerOf(bad, 3);
    EXPECT_EQ(answer.FirstFrame().status().code(), absl::StatusCode::kInvalidArgument) << bad.size();
    v1::StreamScoreResponse parsed;
    EXPECT_EQ(answer.Parse(&parsed).code(), absl::StatusCode::kInvalidArgument) << bad.size();
  }
  // An empty answer is a message of defaults.
  const LazyStreamAnswer empty = AnswerOf("", 1);
  EXPECT_EQ(empty.bytes.Length(), 0u);
  EXPECT_EQ(*empty.FirstFrame(), 0u);
}

}  // namespace
}  // namespace gmmscore::load
