// WAV and raw PCM16 readers: a real WAV from pocketsphinx-testdata, files
// built here, and every kind of damage the header comment promises to name.
#include "kernels/io/wav_reader.h"

#include <sys/stat.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using io_testing::TempPath;
using io_testing::WriteFile;

PcmAudio Ramp(int n, int rate = 16000) {
  PcmAudio audio{rate, {}};
  for (int i = 0; i < n; ++i) audio.samples.push_back(static_cast<int16_t>(i * 97 - 20000));
  return audio;
}

void Put32(std::string* bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>(v >> (8 * i));
}
void Put16(std::string* bytes, size_t at, uint16_t v) {
  for (int i = 0; i < 2; ++i) (*bytes)[at + i] = static_cast<char>(v >> (8 * i));
}

TEST(WavReaderTest, RoundTripsEncodedFile) {
  const PcmAudio audio = Ramp(1001);
  const std::string bytes = EncodeWav(audio);
  ASSERT_EQ(bytes.size(), 44u + 2 * 1001);
  absl::StatusOr<PcmAudio> got = DecodeWav(bytes, "x.wav");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sample_rate, 16000);
  EXPECT_EQ(got->samples, audio.samples);
}

TEST(WavReaderTest, SkipsOtherChunksAndReadsExtensiblePcm) {
  const PcmAudio audio = Ramp(10, 8000);
  std::string plain = EncodeWav(audio);
  // A LIST chunk of odd size (padded) between fmt and data.
  std::string with_list = plain.substr(0, 36) + std::string("LIST\x03\x00\x00\x00" "abc\x00", 12) + plain.substr(36);
  absl::StatusOr<PcmAudio> got = DecodeWav(with_list, "list.wav");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->samples, audio.samples);
  EXPECT_EQ(got->sample_rate, 8000);

  // WAVE_FORMAT_EXTENSIBLE with the PCM sub-format GUID.
  std::string ext = plain.substr(0, 12) + "fmt " + std::string(4, '\0') + plain.substr(20, 16) +
                    std::string("\x16\x00\x10\x00\x04\x00\x00\x00\x01\x00\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71", 24) +
                    plain.substr(36);
  Put32(&ext, 16, 40);
  Put16(&ext, 20, 0xFFFE);
  got = DecodeWav(ext, "ext.wav");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->samples, audio.samples);
  // The same with a float sub-format is refused.
  ext[44] = 3;
  EXPECT_EQ(DecodeWav(ext, "ext.wav").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(WavReaderTest, ReadsPocketsphinxTestdataWav) {
  const std::string path =
      "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav";
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) GTEST_SKIP() << path << " missing: run tools/install_deps.sh";
  absl::StatusOr<PcmAudio> got = ReadSpeechFile(path, 0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sample_rate, 16000);
  EXPECT_EQ(got->samples.size(), (95724u - 44u) / 2);
}

TEST(WavReaderTest, RawFilesAndDetection) {
  const std::string raw = TempPath("speech.raw");
  WriteFile(raw, std::string("\x01\x00\xff\xff\x00\x80", 6));
  absl::StatusOr<PcmAudio> got = ReadSpeechFile(raw, 8000);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->sample_rate, 8000);
  EXPECT_EQ(got->samples, (std::vector<int16_t>{1, -1, -32768}));

  WriteFile(raw, std::string("\x01\x00\xff", 3));
  absl::Status odd = ReadSpeechFile(raw, 16000).status();
  EXPECT_EQ(odd.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.message(), HasSubstr(raw));
  EXPECT_THAT(odd.message(), HasSubstr("odd number of bytes"));

  // A .wav whose magic is damaged is an error, not raw samples.
  const std::string wav = TempPath("damaged.wav");
  std::string bytes = EncodeWav(Ramp(20));
  bytes[0] = 'X';
  WriteFile(wav, bytes);
  absl::Status status = ReadSpeechFile(wav, 16000).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(wav));
  EXPECT_THAT(status.message(), HasSubstr("RIFF"));

  EXPECT_EQ(ReadSpeechFile(TempPath("missing.wav"), 16000).status().code(), absl::StatusCode::kNotFound);

  // Neither WAV nor named as raw: refused, not read as noise.
  const std::string text = TempPath("feats.txt");
  WriteFile(text, "utt  [\n  1 2 \n ]\n");
  absl::Status unknown = ReadSpeechFile(text, 16000).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("neither WAV"));
}

TEST(WavReaderTest, EveryTruncationIsDataLossOrInvalidNamingTheFile) {
  const std::string bytes = EncodeWav(Ramp(50));
  for (size_t size = 0; size < bytes.size(); ++size) {
    absl::Status status = DecodeWav(bytes.substr(0, size), "cut.wav").status();
    ASSERT_FALSE(status.ok()) << size;
    EXPECT_THAT(status.message(), HasSubstr("cut.wav")) << size;
    // Inside the samples: the data chunk declares more than the file holds.
    if (size >= 44) EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << size;
  }
  absl::Status cut = DecodeWav(bytes.substr(0, 60), "cut.wav").status();
  EXPECT_EQ(cut.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(cut.message(), HasSubstr("truncated"));
  EXPECT_EQ(DecodeWav(bytes.substr(0, 30), "cut.wav").status().code(), absl::StatusCode::kDataLoss);
}

TEST(WavReaderTest, UnsupportedAndMalformedHeaders) {
  const std::string good = EncodeWav(Ramp(8));
  auto decode = [](const std::string& b) { return DecodeWav(b, "bad.wav").status(); };
  std::string b = good;
  Put16(&b, 22, 2);  // stereo
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(decode(b).message(), HasSubstr("2 channel"));
  b = good;
  Put16(&b, 34, 8);  // 8-bit
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kUnimplemented);
  b = good;
  Put16(&b, 20, 3);  // IEEE float
  EXPECT_THAT(decode(b).message(), HasSubstr("IEEE float"));
  b = good;
  Put16(&b, 32, 4);  // block align disagrees with mono 16-bit
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kInvalidArgument);
  b = good;
  Put32(&b, 24, 0);  // sample rate 0
  EXPECT_THAT(decode(b).message(), HasSubstr("sample rate 0"));
  b = good;
  Put32(&b, 40, 7);  // odd data size
  EXPECT_THAT(decode(b).message(), HasSubstr("odd size"));
  b = good;
  Put32(&b, 40, 0xFFFFFFFFu);  // streaming writers' "unknown" size: more than the file holds
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kDataLoss);
  b = good;
  b.replace(8, 4, "AVI ");
  EXPECT_THAT(decode(b).message(), HasSubstr("WAVE"));
  b = good;
  b.replace(0, 4, "RIFX");
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kUnimplemented);
  b = good;
  b.replace(36, 4, "junk");  // the data chunk renamed: there is none
  EXPECT_THAT(decode(b).message(), HasSubstr("no \"data\" chunk"));
  b = good.substr(0, 12) + good.substr(36);  // data before fmt
  EXPECT_THAT(decode(b).message(), HasSubstr("before the \"fmt \" chunk"));
  b = good;
  Put32(&b, 16, 12);  // fmt chunk too short
  EXPECT_EQ(decode(b).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
