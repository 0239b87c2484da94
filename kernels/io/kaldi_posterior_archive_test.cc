#include "kernels/io/kaldi_posterior_archive.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/kaldi_bytes_test_util.h"
#include "kernels/io/internal/test_util.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::BinaryHeader;
using ::gmmscore::io_testing::F32;
using ::gmmscore::io_testing::F64;
using ::gmmscore::io_testing::I32;
using ::gmmscore::io_testing::TempPath;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

using Frame = std::vector<std::pair<int32_t, float>>;

const KaldiPosterior kExample = {{{12, 0.6f}, {13, 0.4f}}, {{5, 1.0f}}};

std::vector<KaldiPosteriorEntry> ReadAll(const std::string& data) {
  auto reader = KaldiPosteriorArchiveReader::FromString(data, "post.ark");
  absl::StatusOr<std::vector<KaldiPosteriorEntry>> entries = ReadAllFrom(*reader);
  EXPECT_TRUE(entries.ok()) << entries.status();
  return entries.ok() ? *entries : std::vector<KaldiPosteriorEntry>();
}

absl::Status ReadError(const std::string& data) {
  auto reader = KaldiPosteriorArchiveReader::FromString(data, "bad.ark");
  return ReadAllFrom(*reader).status();
}

std::string Append(const std::string& key, const KaldiPosterior& posterior, bool text) {
  std::string out;
  EXPECT_TRUE(AppendKaldiPosteriorEntry(key, posterior, text, &out).ok());
  return out;
}

TEST(KaldiPosteriorArchiveTest, WritesTextAsWritePosterior) {
  EXPECT_EQ(Append("utt1", kExample, true), "utt1 [ 12 0.6 13 0.4 ] [ 5 1 ] \n");
  EXPECT_EQ(Append("utt2", {}, true), "utt2 \n");
  EXPECT_EQ(Append("utt3", {{}, {{7, 1.0f / 3}}}, true), "utt3 [ ] [ 7 0.3333333 ] \n");
}

TEST(KaldiPosteriorArchiveTest, WritesBinaryByteForByte) {
  EXPECT_EQ(Append("utt1", kExample, false), "utt1 " + BinaryHeader() + I32(2) + I32(2) + I32(12) + F32(0.6f) +
                                                 I32(13) + F32(0.4f) + I32(1) + I32(5) + F32(1.0f));
  EXPECT_EQ(Append("utt2", {}, false), "utt2 " + BinaryHeader() + I32(0));
}

TEST(KaldiPosteriorArchiveTest, ReadsTextAsKaldiDoes) {
  // "]" straight after a weight, "][" without a space, an empty frame, an
  // utterance without frames, tabs.
  const std::vector<KaldiPosteriorEntry> entries =
      ReadAll("utt1 [ 12 0.6 13 0.4 ] [ 5 1 ] \nutt2 \nutt3 [ ] [ 7 0.5][\t8 +2e-1 ]\n");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].value, kExample);
  EXPECT_THAT(entries[1].value, IsEmpty());
  ASSERT_EQ(entries[2].value.size(), 3u);
  EXPECT_THAT(entries[2].value[0], IsEmpty());
  EXPECT_THAT(entries[2].value[1], ElementsAre(Pair(7, 0.5f)));
  EXPECT_THAT(entries[2].value[2], ElementsAre(Pair(8, 0.2f)));
}

TEST(KaldiPosteriorArchiveTest, ReadsBinaryWithFloatOrDoubleWeights) {
  const std::string data = "utt1 " + BinaryHeader() + I32(2) + I32(1) + I32(3) + F64(0.25) + I32(0) + "utt2 " +
                           BinaryHeader() + I32(1) + I32(1) + I32(9) + F32(0.75f);
  const std::vector<KaldiPosteriorEntry> entries = ReadAll(data);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].value, (KaldiPosterior{{{3, 0.25f}}, {}}));
  EXPECT_EQ(entries[1].value, (KaldiPosterior{{{9, 0.75f}}}));
}

TEST(KaldiPosteriorArchiveTest, RandomRoundTripsThroughFiles) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  std::vector<KaldiPosteriorEntry> entries;
  for (int i = 0; i < 10; ++i) {
    entries.push_back({"utt" + std::to_string(i), KaldiPosterior(rng() % 30)});
    for (Frame& frame : entries.back().value) {
      for (int k = rng() % 4; k > 0; --k) frame.emplace_back(static_cast<int32_t>(rng() % 5000), weight(rng));
    }
  }
  const std::string path = TempPath("post.ark");
  ASSERT_TRUE(WriteKaldiPosteriorArchive("ark:" + path, entries).ok());
  absl::StatusOr<std::vector<KaldiPosteriorEntry>> binary = ReadKaldiPosteriorArchive("ark:" + path);
  ASSERT_TRUE(binary.ok()) << binary.status();
  ASSERT_EQ(binary->size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ((*binary)[i].value, entries[i].value);
  // Text keeps 7 digits: the text is stable and the ids exact.
  ASSERT_TRUE(WriteKaldiPosteriorArchive("ark,t:" + path, entries).ok());
  const std::string text = io_testing::ReadFile(path);
  absl::StatusOr<std::vector<KaldiPosteriorEntry>> from_text = ReadKaldiPosteriorArchive("ark:" + path);
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  ASSERT_TRUE(WriteKaldiPosteriorArchive("ark,t:" + path, *from_text).ok());
  EXPECT_EQ(io_testing::ReadFile(path), text);
}

TEST(KaldiPosteriorArchiveTest, MalformedEntriesAreInvalidArgument) {
  EXPECT_THAT(ReadError("utt1 12 0.6\n").message(),
              AllOf(HasSubstr("bad.ark"), HasSubstr("utt1"), HasSubstr("alignments given where posteriors")));
  EXPECT_THAT(ReadError("utt1 [ x 0.5 ]\n").message(), HasSubstr("expected an int32 id and a weight"));
  EXPECT_THAT(ReadError("utt1 [ 1.5 0.5 ]\n").message(), HasSubstr("expected an int32 id"));
  EXPECT_THAT(ReadError("utt1 [ 5 ]\n").message(), HasSubstr("frame 0, pair 0"));
  EXPECT_THAT(ReadError("utt1 [ 5 1 ] [ 6 w ]\n").message(), HasSubstr("frame 1, pair 0"));
  EXPECT_THAT(ReadError("utt1 [ 5 1\nutt2 [ ]\n").message(), HasSubstr("ends before \"]\""));
  EXPECT_THAT(ReadError("utt1 [5 1 ]\n").message(), HasSubstr("expected \"[\""));
  EXPECT_THAT(ReadError("utt1 " + BinaryHeader() + I32(20000000)).message(), HasSubstr("implausibly large"));
  EXPECT_THAT(ReadError("utt1 " + BinaryHeader() + I32(1) + I32(-2)).message(), HasSubstr("negative pair count"));
  EXPECT_EQ(ReadError("utt1 [ 5 1 ]\n").code(), absl::StatusCode::kOk);
  EXPECT_EQ(ReadError("utt1 [ x 1 ]\n").code(), absl::StatusCode::kInvalidArgument);
}

TEST(KaldiPosteriorArchiveTest, EveryTruncationOfABinaryArchiveFailsCleanly) {
  const std::string data = Append("utt1", kExample, false);
  for (size_t n = 1; n < data.size(); ++n) {
    const absl::Status status = ReadError(data.substr(0, n));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << n << ": " << status;
  }
}

}  // namespace
}  // namespace gmmscore
