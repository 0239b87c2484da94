// HTK MMF and parameter-file readers on crafted files in HTK's documented
// syntax (HTK Book ch. 7), and on damaged ones.
#include "kernels/io/htk_model.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/tied_mixture_reference.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

// Two HMMs; "b" and "a" share state macro ~s "shared"; a mixture macro and a
// variance macro are used by reference; keywords in mixed case as HHEd and
// hand-written files have them.
const char kSingleStream[] = R"(~o
<STREAMINFO> 1 2
<VECSIZE> 2<NULLD><MFCC_0><DIAGC>
~v "varFloor1"
<Variance> 2
 1.0e-02 1.0e-02
~m "mix1"
<MEAN> 2
 1.0 2.0
<VARIANCE> 2
 0.5 2.0
<GCONST> 1.0
~s "shared"
<NUMMIXES> 2
<MIXTURE> 1 0.25
~m "mix1"
<MIXTURE> 2 0.75
<MEAN> 2
 -1.0 0.0
<VARIANCE> 2
 1.0 1.0
~h "a"
<BEGINHMM>
<NUMSTATES> 4
<STATE> 2
<Mean> 2
 0.0 0.0
<Variance> 2
 1.0 4.0
<STATE> 3
~s "shared"
<TRANSP> 4
 0.0 1.0 0.0 0.0
 0.0 0.6 0.4 0.0
 0.0 0.0 0.6 0.4
 0.0 0.0 0.0 0.0
<ENDHMM>
~h "b"
<BeginHMM>
<NumStates> 3
<State> 2 ~s "shared"
<TransP> 3
 0.0 1.0 0.0
 0.0 0.5 0.5
 0.0 0.0 0.0
<EndHMM>
)";

double LogNormal(double x, double mean, double var) {
  return -0.5 * (std::log(2 * M_PI * var) + (x - mean) * (x - mean) / var);
}

TEST(HtkMmfTest, SharedStatesBecomeOneScoringStateWithNames) {
  absl::StatusOr<HtkModel> htk = ParseHtkMmf(kSingleStream, "hmmdefs");
  ASSERT_TRUE(htk.ok()) << htk.status();
  EXPECT_EQ(htk->model.num_states(), 2);
  EXPECT_EQ(htk->state_names, (std::vector<std::string>{"a[2]", "shared"}));
  EXPECT_EQ(htk->hmm_states.at("a"), (std::vector<int>{0, 1}));
  EXPECT_EQ(htk->hmm_states.at("b"), (std::vector<int>{1}));
  EXPECT_EQ(htk->parameter_kind, "MFCC_0");
  absl::StatusOr<DiagGmmModel> diag = htk->model.ToDiagGmmModel();
  ASSERT_TRUE(diag.ok()) << diag.status();
  FloatMatrix x(1, 2);
  x.at(0, 0) = 0.5f;
  x.at(0, 1) = 1.0f;
  const std::vector<double> ll = ReferenceLogLikelihoods(*diag, x.view());
  EXPECT_NEAR(ll[0], LogNormal(0.5, 0, 1) + LogNormal(1, 0, 4), 1e-5);
  const double shared = std::log(0.25 * std::exp(LogNormal(0.5, 1, 0.5) + LogNormal(1, 2, 2)) +
                                 0.75 * std::exp(LogNormal(0.5, -1, 1) + LogNormal(1, 0, 1)));
  EXPECT_NEAR(ll[1], shared, 1e-5);
}

const char kTwoStreams[] = R"(~o <STREAMINFO> 2 1 2 <VECSIZE> 3 <DIAGC>
~h "x"
<BEGINHMM> <NUMSTATES> 3
<STATE> 2 <NUMMIXES> 2 1
<SWEIGHTS> 2 1.0 0.5
<STREAM> 1
<MIXTURE> 1 0.5 <MEAN> 1 0.0 <VARIANCE> 1 1.0
<MIXTURE> 2 0.5 <MEAN> 1 2.0 <VARIANCE> 1 1.0
<STREAM> 2
<MEAN> 2 1.0 1.0 <VARIANCE> 2 1.0 2.0
<TRANSP> 3 0 1 0 0 0.5 0.5 0 0 0
<ENDHMM>
)";

TEST(HtkMmfTest, MultiStreamStatesWithStreamWeights) {
  absl::StatusOr<HtkModel> htk = ParseHtkMmf(kTwoStreams, "streams");
  ASSERT_TRUE(htk.ok()) << htk.status();
  EXPECT_EQ(htk->model.num_streams(), 2);
  EXPECT_EQ(htk->model.dim(), 3);
  EXPECT_FLOAT_EQ(htk->model.stream_weight(1), 0.5f);
  EXPECT_EQ(htk->model.ToDiagGmmModel().status().code(), absl::StatusCode::kUnimplemented);
  FloatMatrix x(1, 3);
  x.at(0, 0) = 1.0f;
  x.at(0, 1) = 0.0f;
  x.at(0, 2) = 3.0f;
  const double expected = std::log(0.5 * std::exp(LogNormal(1, 0, 1)) + 0.5 * std::exp(LogNormal(1, 2, 1))) +
                          0.5 * (LogNormal(0, 1, 1) + LogNormal(3, 1, 2));
  EXPECT_NEAR(TiedMixtureReferenceLogLikelihoods(htk->model, x.view())[0], expected, 1e-5);
}

TEST(HtkMmfTest, MalformedFilesNameFileAndLine) {
  std::string text = kSingleStream;
  const absl::Status truncated = ParseHtkMmf(text.substr(0, text.find("<TRANSP>")), "m").status();
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.message(), HasSubstr("HTK MMF 'm', line"));
  std::string undefined = text;
  undefined.replace(undefined.find("~m \"mix1\"\n<MIXTURE> 2"), 9, "~m \"mixX\"");
  EXPECT_THAT(ParseHtkMmf(undefined, "m").status().message(), HasSubstr("undefined mixture macro ~m \"mixX\""));
  std::string unknown = text;
  unknown.replace(unknown.find("<TRANSP> 4"), 8, "<TRANSQ>");
  EXPECT_THAT(ParseHtkMmf(unknown, "m").status().message(), HasSubstr("line 32: expected <TransP> or ~t, got \"<TRANSQ>\""));
  std::string size = text;
  size.replace(size.find("<Mean> 2\n 0.0 0.0"), 17, "<Mean> 3\n 0 0 0");
  EXPECT_THAT(ParseHtkMmf(size, "m").status().message(), HasSubstr("vector size 3, expected 2"));
  std::string full = text;
  full.replace(full.find("<DIAGC>"), 7, "<FULLC>");
  EXPECT_EQ(ParseHtkMmf(full, "m").status().code(), absl::StatusCode::kUnimplemented);
  std::string bad_var = text;
  bad_var.replace(bad_var.find(" 1.0 4.0"), 8, " 1.0 0.0");
  EXPECT_THAT(ParseHtkMmf(bad_var, "m").status().message(), HasSubstr("is not positive"));
  EXPECT_EQ(ReadHtkMmf("/nonexistent/hmmdefs").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(LooksLikeHtkMmf("  ~o <VECSIZE> 39"));
  EXPECT_FALSE(LooksLikeHtkMmf("<DIMENSION> 39"));
}

TEST(HtkParameterFileTest, RoundTripAndDamage) {
  FloatMatrix frames(3, 2);
  for (int i = 0; i < 6; ++i) frames.data()[i] = 0.5f * i - 1.0f;
  const std::string bytes = EncodeHtkParameterFile(frames.view(), 100000, 6 | 0x100);  // MFCC_D
  EXPECT_EQ(bytes.size(), 12u + 24u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\0\3", 4));  // big-endian sample count
  absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(bytes, "f.mfc");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->frames, frames);
  EXPECT_EQ(read->sample_period, 100000);
  EXPECT_EQ(read->parameter_kind, 6 | 0x100);
  const absl::Status truncated = DecodeHtkParameterFile(bytes.substr(0, 30), "f.mfc").status();
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.message(), HasSubstr("f.mfc"));
  std::string compressed = bytes;
  compressed[10] |= 0x04;  // _C on 3 samples: no room for A and B
  EXPECT_EQ(DecodeHtkParameterFile(compressed, "f").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(DecodeHtkParameterFile(compressed, "f").status().message(), HasSubstr("too few to hold its A and B"));
  std::string swapped = bytes;
  std::swap(swapped[8], swapped[9]);  // sample size byte-swapped
  EXPECT_EQ(DecodeHtkParameterFile(swapped, "f").status().code(), absl::StatusCode::kDataLoss);  // 2048-byte frames
  EXPECT_THAT(DecodeHtkParameterFile(bytes + "xyz", "f").status().message(), HasSubstr("3 bytes after"));
}

// ---- Parameter files: compressed, little-endian, _K, ranges, damage. ----
// Inputs are fresh each run; GMMSCORE_TEST_SEED=N repeats one.

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

constexpr int kMfcc = 6;
constexpr int kCompressed = 02000;
constexpr int kChecksum = 010000;

// Builds a parameter file byte by byte, independently of the encoder.
class HtkBytes {
 public:
  explicit HtkBytes(bool big_endian = true) : big_endian_(big_endian) {}
  template <typename T>
  HtkBytes& Put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    if (big_endian_ == (std::endian::native == std::endian::little)) std::reverse(bytes, bytes + sizeof(T));
    out_.append(bytes, sizeof(T));
    return *this;
  }
  HtkBytes& Header(int32_t samples, int32_t period, int16_t sample_bytes, int kind) {
    return Put(samples).Put(period).Put(sample_bytes).Put(static_cast<uint16_t>(kind));
  }
  const std::string& bytes() const { return out_; }

 private:
  bool big_endian_;
  std::string out_;
};

FloatMatrix RandomFrames(std::mt19937_64& random, int64_t rows, int64_t cols, float scale = 30.0f) {
  FloatMatrix m(rows, cols);
  std::uniform_real_distribution<float> value(-scale, scale);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = value(random);
  return m;
}

// Awkward shapes: no frames, one frame, one dimension, 39 and more.
const std::vector<std::pair<int, int>> kShapes = {{0, 13}, {1, 1}, {1, 39}, {7, 1}, {50, 39}, {23, 60}};

std::string TempPath(absl::string_view name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return absl::StrCat(::testing::TempDir(), "/htk_model_test_", getpid(), "_", info->name(), "_", name);
}

void WriteBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(HtkParameterFileTest, CompressedFilesDecodeAsHParmAgainstFloat64) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (const auto& [frames, dim] : kShapes) {
    SCOPED_TRACE(testing::Message() << frames << " x " << dim);
    std::vector<float> a(dim), b(dim);
    std::vector<int16_t> s(static_cast<size_t>(frames) * dim);
    for (int d = 0; d < dim; ++d) {
      // A of any sign and a wide range of magnitudes (HTK's own are 65534/range).
      a[d] = std::ldexp(std::uniform_real_distribution<float>(0.5f, 1.0f)(random),
                        std::uniform_int_distribution<int>(-20, 20)(random)) *
             (random() % 2 ? 1 : -1);
      b[d] = std::uniform_real_distribution<float>(-4e4f, 4e4f)(random);
    }
    for (int16_t& v : s) v = static_cast<int16_t>(std::uniform_int_distribution<int>(-32767, 32767)(random));
    for (const bool big_endian : {true, false}) {
      HtkBytes file(big_endian);
      file.Header(frames + 4, 100000, 2 * dim, kMfcc | kCompressed);
      for (float v : a) file.Put(v);
      for (float v : b) file.Put(v);
      for (int16_t v : s) file.Put(v);
      absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(file.bytes(), "c.mfc");
      ASSERT_TRUE(read.ok()) << read.status();
      ASSERT_EQ(read->frames.rows(), frames);
      ASSERT_EQ(read->frames.cols(), dim);
      EXPECT_EQ(read->parameter_kind, kMfcc | kCompressed);
      for (int t = 0; t < frames; ++t) {
        for (int d = 0; d < dim; ++d) {
          const double reference = (static_cast<double>(s[t * dim + d]) + b[d]) / a[d];
          ASSERT_EQ(read->frames.at(t, d), static_cast<float>(reference)) << "frame " << t << ", dimension " << d;
        }
      }
    }
  }
}

TEST(HtkParameterFileTest, CompressedEncoderRoundTripsWithinItsStep) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (const auto& [rows, cols] : kShapes) {
    SCOPED_TRACE(testing::Message() << rows << " x " << cols);
    FloatMatrix frames = RandomFrames(random, rows, cols);
    if (rows > 1) {
      for (int64_t t = 0; t < rows; ++t) frames.at(t, 0) = 7.25f;  // a constant dimension: A = 1, B = 7.25
    }
    for (const bool little_endian : {false, true}) {
      const std::string bytes = EncodeHtkParameterFile(
          frames.view(), {.parameter_kind = kMfcc, .compressed = true, .little_endian = little_endian});
      EXPECT_EQ(bytes.size(), 12u + 2u * cols * (rows + 4));
      absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(bytes, "c.mfc");
      ASSERT_TRUE(read.ok()) << read.status();
      ASSERT_EQ(read->frames.rows(), rows);
      ASSERT_EQ(read->frames.cols(), cols);
      for (int64_t d = 0; d < cols; ++d) {
        float low = std::numeric_limits<float>::max(), high = -low;
        for (int64_t t = 0; t < rows; ++t) {
          low = std::min(low, frames.at(t, d));
          high = std::max(high, frames.at(t, d));
        }
        // Half a step of 65534 steps over the range, plus float rounding.
        const double allowed = (high - low) / 65534.0 * 0.5 * 1.001 + 4e-6 * std::max(std::abs(low), std::abs(high));
        for (int64_t t = 0; t < rows; ++t) {
          ASSERT_NEAR(read->frames.at(t, d), frames.at(t, d), allowed) << "frame " << t << ", dimension " << d;
        }
      }
    }
  }
}

TEST(HtkParameterFileTest, LittleEndianFilesAreReadByTheirSize) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (const auto& [rows, cols] : kShapes) {
    const FloatMatrix frames = RandomFrames(random, rows, cols);
    for (const bool little_endian : {false, true}) {
      for (const bool crc : {false, true}) {
        SCOPED_TRACE(testing::Message() << rows << " x " << cols << ", little-endian " << little_endian << ", _K "
                                        << crc);
        const int kind = kMfcc | (crc ? kChecksum : 0);
        std::string file =
            EncodeHtkParameterFile(frames.view(), {.parameter_kind = kind, .little_endian = little_endian});
        if (crc) file += "\x12\x34";
        EXPECT_EQ(file.substr(0, 4), HtkBytes(!little_endian).Put(static_cast<int32_t>(rows)).bytes());
        absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(file, "le.mfc");
        ASSERT_TRUE(read.ok()) << read.status();
        EXPECT_EQ(read->frames, frames);
        EXPECT_EQ(read->sample_period, 100000);
        EXPECT_EQ(read->parameter_kind, kind);
        EXPECT_TRUE(LooksLikeHtkParameterFile(file.substr(0, 12), file.size()));
        EXPECT_FALSE(LooksLikeHtkParameterFile(file.substr(0, 12), file.size() + 4));
      }
    }
  }
}

TEST(HtkParameterFileTest, ChecksumBytesOnlyWithK) {
  FloatMatrix frames(2, 3, 1.5f);
  std::string bytes = EncodeHtkParameterFile(frames.view(), 100000, kMfcc | kChecksum) + "\xab\xcd";
  absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(bytes, "k.mfc");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->frames, frames);
  const std::string compressed =
      EncodeHtkParameterFile(frames.view(), {.parameter_kind = kMfcc | kChecksum, .compressed = true}) + "\xab\xcd";
  read = DecodeHtkParameterFile(compressed, "kc.mfc");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->frames, frames);
  const std::string no_k = EncodeHtkParameterFile(frames.view(), 100000, kMfcc) + "\xab\xcd";
  const absl::Status status = DecodeHtkParameterFile(no_k, "k.mfc").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("2 bytes after the 2 frames"));
}

TEST(HtkParameterFileTest, NonFiniteValuesAndScalesNameFrameAndDimension) {
  FloatMatrix frames(4, 5, 0.25f);
  frames.at(2, 3) = std::numeric_limits<float>::quiet_NaN();
  absl::Status status = DecodeHtkParameterFile(EncodeHtkParameterFile(frames.view()), "nan.mfc").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'nan.mfc', byte offset 64: frame 2, dimension 3 is not finite"));
  frames.at(2, 3) = std::numeric_limits<float>::infinity();
  EXPECT_THAT(DecodeHtkParameterFile(EncodeHtkParameterFile(frames.view()), "inf.mfc").status().message(),
              HasSubstr("frame 2, dimension 3 is not finite"));

  // Compressed: A = 0 (and a NaN B) is refused; a tiny A overflows a value.
  HtkBytes zero_a;
  zero_a.Header(5, 100000, 4, kMfcc | kCompressed)
      .Put(1.0f)
      .Put(0.0f)
      .Put(0.0f)
      .Put(0.0f)
      .Put<int16_t>(1)
      .Put<int16_t>(2);
  status = DecodeHtkParameterFile(zero_a.bytes(), "z.mfc").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("dimension 1 has compression scale A = 0"));
  HtkBytes nan_b;
  nan_b.Header(5, 100000, 2, kMfcc | kCompressed)
      .Put(1.0f)
      .Put(std::numeric_limits<float>::quiet_NaN())
      .Put<int16_t>(1);
  EXPECT_THAT(DecodeHtkParameterFile(nan_b.bytes(), "b.mfc").status().message(), HasSubstr("dimension 0 has"));
  HtkBytes tiny_a;
  tiny_a.Header(6, 100000, 2, kMfcc | kCompressed).Put(1e-38f).Put(0.0f).Put<int16_t>(0).Put<int16_t>(30000);
  status = DecodeHtkParameterFile(tiny_a.bytes(), "t.mfc").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("byte offset 22: frame 1, dimension 0 is not finite"));
}

TEST(HtkParameterFileTest, KindsAndHeaders) {
  // IREFC: int16 / 32767, as HParm.c reads it.
  HtkBytes irefc;
  irefc.Header(2, 100000, 4, 5).Put<int16_t>(32767).Put<int16_t>(-16384).Put<int16_t>(0).Put<int16_t>(1);
  absl::StatusOr<HtkFeatures> read = DecodeHtkParameterFile(irefc.bytes(), "r.irefc");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->frames.at(0, 0), 1.0f);
  EXPECT_EQ(read->frames.at(0, 1), static_cast<float>(-16384.0 / 32767.0));
  EXPECT_EQ(read->frames.at(1, 1), static_cast<float>(1.0 / 32767.0));

  HtkBytes waveform;
  waveform.Header(2, 625, 2, 0).Put<int16_t>(1).Put<int16_t>(2);
  EXPECT_EQ(DecodeHtkParameterFile(waveform.bytes(), "w").status().code(), absl::StatusCode::kUnimplemented);
  HtkBytes discrete;
  discrete.Header(1, 100000, 2, 10).Put<int16_t>(3);
  EXPECT_EQ(DecodeHtkParameterFile(discrete.bytes(), "v").status().code(), absl::StatusCode::kUnimplemented);
  HtkBytes odd;
  odd.Header(1, 100000, 6, kMfcc).Put(1.0f).Put<int16_t>(0);
  EXPECT_THAT(DecodeHtkParameterFile(odd.bytes(), "o").status().message(), HasSubstr("whole number of float32"));

  // Truncated anywhere: DATA_LOSS naming the file, in either byte order.
  const std::string full = EncodeHtkParameterFile(FloatMatrix(3, 2, 1.0f).view(), {.compressed = true});
  for (size_t cut : {0, 5, 11, 12, 20, 28, 30}) {
    const absl::Status status = DecodeHtkParameterFile(full.substr(0, cut), "cut.mfc").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("'cut.mfc'"));
  }
  EXPECT_FALSE(LooksLikeHtkParameterFile("#!MLF!#\n", 8));
  EXPECT_FALSE(LooksLikeHtkParameterFile(full.substr(0, 12), full.size() - 1));
}

TEST(HtkParameterFileTest, FrameRangesReadOnlyTheirFrames) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  const FloatMatrix frames = RandomFrames(random, 40, 39);
  for (const HtkEncodeOptions& options :
       {HtkEncodeOptions{}, HtkEncodeOptions{.compressed = true}, HtkEncodeOptions{.little_endian = true},
        HtkEncodeOptions{.compressed = true, .little_endian = true}}) {
    SCOPED_TRACE(testing::Message() << "compressed " << options.compressed << ", little-endian "
                                    << options.little_endian);
    const std::string path = TempPath("range.mfc");
    WriteBytes(path, EncodeHtkParameterFile(frames.view(), options));
    absl::StatusOr<HtkFeatures> whole = ReadHtkParameterFile(path);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (int trial = 0; trial < 10; ++trial) {
      const int64_t first = random() % 40, last = first + random() % (40 - first);
      absl::StatusOr<HtkFeatures> part = ReadHtkParameterFrames(path, first, last);
      ASSERT_TRUE(part.ok()) << part.status();
      ASSERT_EQ(part->frames.rows(), last - first + 1);
      for (int64_t t = first; t <= last; ++t) {
        for (int64_t d = 0; d < 39; ++d) ASSERT_EQ(part->frames.at(t - first, d), whole->frames.at(t, d));
      }
    }
    for (const auto& [first, last] : std::vector<std::pair<int64_t, int64_t>>{{0, 40}, {5, 4}, {-1, 3}}) {
      const absl::Status status = ReadHtkParameterFrames(path, first, last).status();
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(status.message(), HasSubstr("of a file of 40 frames"));
    }
    std::string bytes = EncodeHtkParameterFile(frames.view(), options);
    WriteBytes(path, bytes.substr(0, bytes.size() - 3));
    EXPECT_EQ(ReadHtkParameterFrames(path, 0, 0).status().code(), absl::StatusCode::kDataLoss);
  }
  EXPECT_EQ(ReadHtkParameterFrames(TempPath("missing.mfc"), 0, 0).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gmmscore
