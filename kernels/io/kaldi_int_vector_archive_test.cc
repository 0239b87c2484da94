#include "kernels/io/kaldi_int_vector_archive.h"

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
using ::gmmscore::io_testing::I32;
using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<KaldiIntVectorEntry> ReadAll(const std::string& data) {
  auto reader = KaldiIntVectorArchiveReader::FromString(data, "ali.ark");
  absl::StatusOr<std::vector<KaldiIntVectorEntry>> entries = ReadAllFrom(*reader);
  EXPECT_TRUE(entries.ok()) << entries.status();
  return entries.ok() ? *entries : std::vector<KaldiIntVectorEntry>();
}

absl::Status ReadError(const std::string& data) {
  auto reader = KaldiIntVectorArchiveReader::FromString(data, "bad.ark");
  return ReadAllFrom(*reader).status();
}

std::string Append(const std::string& key, const std::vector<int32_t>& values, bool text) {
  std::string out;
  EXPECT_TRUE(AppendKaldiIntVectorEntry(key, values, text, &out).ok());
  return out;
}

TEST(KaldiIntVectorArchiveTest, WritesTextAsBasicVectorHolder) {
  EXPECT_EQ(Append("utt1", {1, 2, 3}, true), "utt1 1 2 3 \n");
  EXPECT_EQ(Append("utt2", {}, true), "utt2 \n");
  EXPECT_EQ(Append("utt3", {-7}, true), "utt3 -7 \n");
}

TEST(KaldiIntVectorArchiveTest, WritesBinaryByteForByte) {
  EXPECT_EQ(Append("utt1", {1, 2, 300000}, false),
            "utt1 " + BinaryHeader() + I32(3) + I32(1) + I32(2) + I32(300000));
  EXPECT_EQ(Append("utt2", {}, false), "utt2 " + BinaryHeader() + I32(0));
  std::string out;
  EXPECT_EQ(AppendKaldiIntVectorEntry("two words", {1}, false, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KaldiIntVectorArchiveTest, ReadsTextAsKaldiDoes) {
  // A tab after the key, a key straight before its newline (empty), signs,
  // any whitespace between values, a last line without its newline.
  const std::vector<KaldiIntVectorEntry> entries =
      ReadAll("utt1 1 2 3 \nutt2 \nutt3\t-5\t+7\r\nutt4\n\nutt5 8");
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].key, "utt1");
  EXPECT_THAT(entries[0].value, ElementsAre(1, 2, 3));
  EXPECT_THAT(entries[1].value, IsEmpty());
  EXPECT_THAT(entries[2].value, ElementsAre(-5, 7));
  EXPECT_EQ(entries[3].key, "utt4");
  EXPECT_THAT(entries[3].value, IsEmpty());
  EXPECT_THAT(entries[4].value, ElementsAre(8));
}

TEST(KaldiIntVectorArchiveTest, ReadsBinaryAndMixedArchives) {
  const std::string data = "a " + BinaryHeader() + I32(2) + I32(10) + I32(-11) + "b 4 5 \n" + "c " + BinaryHeader() +
                           I32(0);
  const std::vector<KaldiIntVectorEntry> entries = ReadAll(data);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_THAT(entries[0].value, ElementsAre(10, -11));
  EXPECT_THAT(entries[1].value, ElementsAre(4, 5));
  EXPECT_EQ(entries[2].key, "c");
  EXPECT_THAT(entries[2].value, IsEmpty());
}

TEST(KaldiIntVectorArchiveTest, RandomRoundTripsThroughFiles) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int32_t> value(-5, 1 << 30);
  std::vector<KaldiIntVectorEntry> entries;
  for (int i = 0; i < 20; ++i) {
    entries.push_back({"utt" + std::to_string(i), {}});
    entries.back().value.resize(rng() % 50);
    for (int32_t& v : entries.back().value) v = value(rng);
  }
  for (const char* options : {"ark", "ark,t"}) {
    const std::string path = TempPath("ali.ark");
    ASSERT_TRUE(WriteKaldiIntVectorArchive(std::string(options) + ":" + path, entries).ok());
    absl::StatusOr<std::vector<KaldiIntVectorEntry>> back =
        ReadKaldiIntVectorArchive("ark:" + path);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ((*back)[i].key, entries[i].key);
      EXPECT_EQ((*back)[i].value, entries[i].value);
    }
  }
}

TEST(KaldiIntVectorArchiveTest, StreamsOneEntryAtATime) {
  const std::string path = TempPath("ali.ark");
  WriteFile(path, "u1 1 \nu2 2 2 \n");
  absl::StatusOr<std::unique_ptr<KaldiIntVectorArchiveReader>> reader =
      KaldiIntVectorArchiveReader::Open("ark:" + path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_TRUE(*(*reader)->Next());
  EXPECT_EQ((*reader)->key(), "u1");
  EXPECT_EQ((*reader)->entry_offset(), 0);
  ASSERT_TRUE(*(*reader)->Next());
  EXPECT_THAT((*reader)->value(), ElementsAre(2, 2));
  EXPECT_EQ((*reader)->entry_offset(), 6);
  EXPECT_FALSE(*(*reader)->Next());
  EXPECT_EQ(KaldiIntVectorArchiveReader::Open("ark:" + TempPath("missing")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(KaldiIntVectorArchiveTest, BadValuesAreInvalidArgument) {
  for (const char* bad : {"utt1 1 x 3\n", "utt1 1.5\n", "utt1 99999999999\n", "utt1 --1\n", "utt1 +-1\n"}) {
    const absl::Status status = ReadError(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), AllOf(HasSubstr("bad.ark"), HasSubstr("utt1"), HasSubstr("expected an int32")))
        << bad;
  }
  EXPECT_THAT(ReadError("utt1 " + BinaryHeader() + I32(-1)).message(), HasSubstr("negative vector size"));
  EXPECT_THAT(ReadError("utt1 " + BinaryHeader() + "\x08" + std::string(8, '\0')).message(),
              HasSubstr("expected the size byte 4"));
  EXPECT_THAT(ReadError(std::string("utt1 \0C", 7)).message(), HasSubstr("binary header"));
}

TEST(KaldiIntVectorArchiveTest, ErrorsAreSticky) {
  auto reader = KaldiIntVectorArchiveReader::FromString("a 1\nb x\nc 3\n", "x.ark");
  ASSERT_TRUE(*reader->Next());
  const absl::Status first = reader->Next().status();
  EXPECT_FALSE(first.ok());
  EXPECT_EQ(reader->Next().status(), first);
}

TEST(KaldiIntVectorArchiveTest, EveryTruncationOfABinaryArchiveFailsCleanly) {
  const std::string first = "utt1 " + BinaryHeader() + I32(3) + I32(1) + I32(2) + I32(3);
  const std::string data = first + "utt2 " + BinaryHeader() + I32(1) + I32(9);
  for (size_t n = 1; n < data.size(); ++n) {
    auto reader = KaldiIntVectorArchiveReader::FromString(data.substr(0, n), "cut.ark");
    const absl::StatusOr<std::vector<KaldiIntVectorEntry>> entries = ReadAllFrom(*reader);
    if (n == first.size()) {
      EXPECT_TRUE(entries.ok()) << entries.status();
    } else {
      EXPECT_EQ(entries.status().code(), absl::StatusCode::kDataLoss) << n << ": " << entries.status();
    }
  }
}

}  // namespace
}  // namespace gmmscore
