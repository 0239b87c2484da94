#include "kernels/io/kaldi_matrix_archive.h"

#include <cstring>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::TestData;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::HasSubstr;

FloatMatrix Ramp(int64_t rows, int64_t cols, float scale) {
  FloatMatrix m(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = scale * static_cast<float>(i) - 1.5f;
  return m;
}

std::string Binary(absl::string_view key, const FloatMatrix& m) {
  std::string out;
  EXPECT_TRUE(AppendKaldiMatrixEntry(key, m.view(), /*text=*/false, &out).ok());
  return out;
}

// Reads `bytes` as an archive file; the status of the first failure, or OK.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadBytes(const std::string& bytes,
                                                        absl::string_view name = "a.ark") {
  const std::string path = TempPath(name);
  WriteFile(path, bytes);
  return ReadKaldiMatrixArchive(absl::StrCat("ark:", path));
}

TEST(KaldiMatrixArchiveTest, ReadsTextFixture) {
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries =
      ReadKaldiMatrixArchive(absl::StrCat("ark,t:", TestData("tiny_feats.txt")));
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].key, "utt1");
  EXPECT_EQ((*entries)[0].matrix.rows(), 4);
  EXPECT_EQ((*entries)[0].matrix.cols(), 3);
  EXPECT_EQ((*entries)[0].matrix.at(2, 1), 2.0f);
  EXPECT_EQ((*entries)[1].key, "utt2");
  EXPECT_EQ((*entries)[1].matrix.at(0, 0), 2.5f);
}

TEST(KaldiMatrixArchiveTest, TextWriterReproducesKaldiTextByteForByte) {
  const std::string fixture = ReadFile(TestData("tiny_feats.txt"));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries =
      ReadKaldiMatrixArchive(absl::StrCat("ark:", TestData("tiny_feats.txt")));
  ASSERT_TRUE(entries.ok());
  const std::string path = TempPath("out.txt");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark,t:", path), *entries).ok());
  EXPECT_EQ(ReadFile(path), fixture);
}

TEST(KaldiMatrixArchiveTest, BinaryEntryLayoutIsKaldis) {
  FloatMatrix m(2, 3);
  for (int i = 0; i < 6; ++i) m.data()[i] = static_cast<float>(i);
  const std::string bytes = Binary("utt", m);
  std::string expected("utt \0BFM \x04\x02\0\0\0\x04\x03\0\0\0", 19);
  expected.append(reinterpret_cast<const char*>(m.data()), 24);
  EXPECT_EQ(bytes, expected);
}

TEST(KaldiMatrixArchiveTest, BinaryRoundTripWithStreamingReader) {
  const std::string path = TempPath("loglikes.ark");
  {
    absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveWriter>> writer =
        KaldiMatrixArchiveWriter::Open(absl::StrCat("ark:", path));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_FALSE((*writer)->text());
    ASSERT_TRUE((*writer)->Write("a", Ramp(300, 41, 0.01f).view()).ok());
    ASSERT_TRUE((*writer)->Write("b", FloatMatrix().view()).ok());
    ASSERT_TRUE((*writer)->Write("c", Ramp(1, 7, 3.0f).view()).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveReader>> reader =
      KaldiMatrixArchiveReader::Open(absl::StrCat("ark:", path));
  ASSERT_TRUE(reader.ok());
  const std::pair<std::string, FloatMatrix> expected[] = {
      {"a", Ramp(300, 41, 0.01f)}, {"b", FloatMatrix()}, {"c", Ramp(1, 7, 3.0f)}};
  for (const auto& [key, matrix] : expected) {
    absl::StatusOr<bool> more = (*reader)->Next();
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more);
    EXPECT_EQ((*reader)->key(), key);
    EXPECT_EQ((*reader)->matrix(), matrix);
  }
  EXPECT_FALSE(*(*reader)->Next());
  EXPECT_FALSE(*(*reader)->Next());
}

TEST(KaldiMatrixArchiveTest, ReadsDoubleAndMixedEntries) {
  std::string bytes("d \0BDM \x04\x01\0\0\0\x04\x02\0\0\0", 17);
  const double values[] = {0.125, -3.5};
  bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
  bytes += "t  [\n  1 2 \n ]\n";
  bytes += Binary("f", Ramp(2, 2, 1.0f));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadBytes(bytes);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].matrix.at(0, 1), -3.5f);
  EXPECT_EQ((*entries)[1].matrix.at(0, 1), 2.0f);
  EXPECT_EQ((*entries)[2].matrix, Ramp(2, 2, 1.0f));
}

TEST(KaldiMatrixArchiveTest, NaNIsReturnedForTheCallerToReject) {
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadBytes("u  [\n  1 nan 2 ]\n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_TRUE(std::isnan((*entries)[0].matrix.at(0, 1)));
}

TEST(KaldiMatrixArchiveTest, CompressedAndNonMatrixEntries) {
  absl::Status status = ReadBytes(std::string("feat1 \0BCM \x01\x02\x03", 14)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.ToString(), AllOf(HasSubstr("a.ark"), HasSubstr("'feat1'"), HasSubstr("CM"),
                                      HasSubstr("copy-feats")));
  status = ReadBytes(std::string("vec \0BFV \x04\x01\0\0\0", 14)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("expected a float matrix (\"FM \" or \"DM \"), got \"FV\""));
}

TEST(KaldiMatrixArchiveTest, TruncatedBinaryNeverCrashesAndSaysWhere) {
  const std::string first = Binary("one", Ramp(3, 4, 0.5f));
  const std::string bytes = first + Binary("two", Ramp(2, 5, 0.25f));
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::string path = TempPath("cut.ark");
    WriteFile(path, bytes.substr(0, cut));
    auto reader = KaldiMatrixArchiveReader::Open(absl::StrCat("ark:", path));
    ASSERT_TRUE(reader.ok());
    int complete = 0;
    absl::Status error;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next();
      if (!more.ok()) {
        error = more.status();
        break;
      }
      if (!*more) break;
      ++complete;
    }
    if (cut == 0 || cut == first.size()) {
      EXPECT_TRUE(error.ok()) << cut << ": " << error;
      continue;
    }
    EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << cut << ": " << error;
    EXPECT_THAT(error.ToString(), AllOf(HasSubstr("cut.ark"), HasSubstr("byte offset"))) << cut;
    // Once the key is complete, the message names it.
    if (cut % first.size() > 3) {
      EXPECT_THAT(error.ToString(), HasSubstr(cut < first.size() ? "'one'" : "'two'")) << cut;
    }
    EXPECT_EQ(complete, cut < first.size() ? 0 : 1) << cut;
  }
}

TEST(KaldiMatrixArchiveTest, TruncatedOrMalformedText) {
  const std::string text = ReadFile(TestData("tiny_feats.txt"));
  for (const size_t cut : {size_t{6}, size_t{12}, text.find("-2") + 1, text.find("utt2") + 10}) {
    const absl::Status status = ReadBytes(text.substr(0, cut), "cut.txt").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut << ": " << status;
    EXPECT_THAT(status.ToString(), AllOf(HasSubstr("cut.txt"), HasSubstr("line"), HasSubstr("truncated")));
  }
  std::string bad = text;
  bad.replace(bad.find("0.25"), 4, "0.2;5");  // ';' ends a row in Kaldi text
  absl::Status status = ReadBytes(bad, "bad.txt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), AllOf(HasSubstr("bad.txt"), HasSubstr("'utt1'"), HasSubstr("line 3")));

  bad = text;
  bad.replace(bad.find("0.25"), 4, "0.2x5");
  status = ReadBytes(bad, "bad.txt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("line 3: expected a number in matrix row 1, got \"0.2x5\""));
}

TEST(KaldiMatrixArchiveTest, RandomBytesNeverCrash) {
  std::mt19937 rng(17);
  const std::string seed = Binary("k", Ramp(2, 3, 1.0f)) + "t  [\n  1 2 ]\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = seed;
    for (int flips = 0; flips < 3; ++flips) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    (void)ReadBytes(bytes, "fuzz.ark");
  }
}

TEST(KaldiMatrixArchiveTest, OpenErrors) {
  absl::Status status = KaldiMatrixArchiveReader::Open(absl::StrCat("ark:", TempPath("none"))).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.ToString(), HasSubstr("none"));
  EXPECT_EQ(KaldiMatrixArchiveReader::Open("feats.ark").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KaldiMatrixArchiveWriter::Open("ark:/nonexistent-dir/x.ark").status().code(),
            absl::StatusCode::kNotFound);
}

// Fuzzing found rows * cols * 8 overflowing int64 before the size check.
TEST(KaldiMatrixArchiveTest, HugeSizesAreRefusedWithoutOverflow) {
  for (const char type : {'F', 'D'}) {
    std::string bytes = std::string("k \0B", 4) + type + "M \x04";
    const int32_t big = 0x7fffffff;
    bytes.append(reinterpret_cast<const char*>(&big), 4);
    bytes.push_back('\x04');
    bytes.append(reinterpret_cast<const char*>(&big), 4);
    std::unique_ptr<KaldiMatrixArchiveReader> reader = KaldiMatrixArchiveReader::FromString(bytes, "huge.ark");
    absl::Status status = reader->Next().status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("implausibly large"));
    EXPECT_THAT(status.message(), HasSubstr("huge.ark"));
  }
}

TEST(KaldiMatrixArchiveTest, BadKeysAreRejectedOnWrite) {
  std::string out;
  for (const absl::string_view key : {absl::string_view(""), absl::string_view("two words"),
                                      absl::string_view("tab\t"), absl::string_view("nl\n")}) {
    EXPECT_EQ(AppendKaldiMatrixEntry(key, FloatMatrix(1, 1).view(), true, &out).code(),
              absl::StatusCode::kInvalidArgument)
        << key;
  }
  EXPECT_TRUE(AppendKaldiMatrixEntry("spk1-utt_\xc3\xa9", FloatMatrix(1, 1).view(), true, &out).ok());
}

}  // namespace
}  // namespace gmmscore
