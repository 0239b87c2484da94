#include "kernels/io/native_model_file.h"

#include <zlib.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::TestData;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::HasSubstr;

DiagGmmModel Synthetic(int dim, uint64_t seed = 1) {
  absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
      {.num_states = 37, .min_gaussians = 1, .max_gaussians = 12, .dim = dim, .seed = seed});
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

void ExpectIdentical(const DiagGmmModel& a, const DiagGmmModel& b) {
  ASSERT_EQ(a.dim(), b.dim());
  ASSERT_EQ(a.num_states(), b.num_states());
  ASSERT_EQ(a.num_gaussians(), b.num_gaussians());
  EXPECT_TRUE(std::equal(a.state_offsets().begin(), a.state_offsets().end(), b.state_offsets().begin()));
  EXPECT_TRUE(std::equal(a.center().begin(), a.center().end(), b.center().begin()));
  const int64_t n = a.params().rows * a.params().cols;
  EXPECT_EQ(std::memcmp(a.params().data, b.params().data, n * sizeof(float)), 0);
}

template <typename T>
void Poke(std::string* file, int64_t offset, T value) {
  std::memcpy(file->data() + offset, &value, sizeof(T));
}

// Recomputes the checksum, as a writer that meant it would.
void Reseal(std::string* file) {
  uint32_t crc = crc32_z(0, reinterpret_cast<const Bytef*>(file->data()), 60);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(file->data() + 64), file->size() - 64);
  Poke<uint32_t>(file, 60, crc);
}

absl::Status Decode(const std::string& file) { return DecodeNativeModel(file, "m.gmm").status(); }

TEST(NativeModelFileTest, RoundTripsBitForBit) {
  for (const int dim : {13, 39}) {
    SCOPED_TRACE(dim);
    const DiagGmmModel model = Synthetic(dim);
    const std::string path = TempPath(absl::StrCat("model_", dim, ".gmm"));
    ASSERT_TRUE(WriteNativeModel(model, path).ok());
    absl::StatusOr<DiagGmmModel> loaded = ReadNativeModel(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ExpectIdentical(model, *loaded);
    absl::StatusOr<DiagGmmModel> decoded = DecodeNativeModel(ReadFile(path), path);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ExpectIdentical(model, *decoded);
  }
}

TEST(NativeModelFileTest, HeaderIsAsDocumented) {
  const DiagGmmModel model = Synthetic(13);
  const std::string file = EncodeNativeModel(model);
  const int64_t payload = 8 * (model.num_states() + 1) + 4 * 13 + 4 * model.num_gaussians() * 27;
  ASSERT_EQ(static_cast<int64_t>(file.size()), 64 + payload);
  EXPECT_EQ(file.substr(0, 8), std::string("\x89GMM\r\n\x1a\n", 8));
  auto u32 = [&](int offset) { uint32_t v; std::memcpy(&v, file.data() + offset, 4); return v; };
  auto i64 = [&](int offset) { int64_t v; std::memcpy(&v, file.data() + offset, 8); return v; };
  EXPECT_EQ(u32(8), 1u);
  EXPECT_EQ(u32(12), 64u);
  EXPECT_EQ(u32(16), 13u);
  EXPECT_EQ(u32(20), static_cast<uint32_t>(model.num_states()));
  EXPECT_EQ(i64(24), model.num_gaussians());
  EXPECT_EQ(i64(32), payload);
  EXPECT_EQ(file.substr(40, 20), std::string(20, '\0'));
  // Payload: offsets, then centre, then params.
  EXPECT_EQ(i64(64 + 8), model.state_offsets()[1]);
  float center0;
  std::memcpy(&center0, file.data() + 64 + 8 * (model.num_states() + 1), 4);
  EXPECT_EQ(center0, model.center()[0]);
  std::string resealed = file;
  Reseal(&resealed);
  EXPECT_EQ(resealed, file);
}

TEST(NativeModelFileTest, MissingFileIsNotFound) {
  const absl::Status status = ReadNativeModel(TempPath("nope.gmm")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.ToString(), HasSubstr("nope.gmm"));
}

TEST(NativeModelFileTest, TruncationIsDataLoss) {
  const std::string file = EncodeNativeModel(Synthetic(13));
  for (const size_t size : {size_t{0}, size_t{5}, size_t{8}, size_t{63}, size_t{64}, size_t{100},
                            file.size() / 2, file.size() - 1}) {
    const std::string path = TempPath("cut.gmm");
    WriteFile(path, file.substr(0, size));
    const absl::Status status = ReadNativeModel(path).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << size << ": " << status;
    EXPECT_THAT(status.ToString(), AllOf(HasSubstr("cut.gmm"), HasSubstr("truncated"))) << size;
    EXPECT_EQ(Decode(file.substr(0, size)).code(), absl::StatusCode::kDataLoss) << size;
  }
  const absl::Status longer = Decode(file + "x");
  EXPECT_EQ(longer.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(longer.ToString(), HasSubstr("1 unexpected bytes after the payload"));
}

TEST(NativeModelFileTest, FlippedBytesFailTheChecksum) {
  const std::string file = EncodeNativeModel(Synthetic(13));
  // In the offsets, the centre, the parameters, the last byte, the stored
  // checksum, a count in the header and a reserved byte.
  for (const size_t at : {size_t{64}, size_t{64 + 8 * 38 + 1}, file.size() / 2, file.size() - 1,
                          size_t{61}, size_t{17}, size_t{45}}) {
    std::string bad = file;
    bad[at] ^= 0x10;
    const absl::Status status = Decode(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << at << ": " << status;
    EXPECT_THAT(status.ToString(), AllOf(HasSubstr("m.gmm"), HasSubstr("checksum mismatch"))) << at;
  }
}

TEST(NativeModelFileTest, WrongMagicOrVersionIsInvalidArgument) {
  const std::string file = EncodeNativeModel(Synthetic(13));
  std::string bad = file;
  bad[1] = 'X';
  absl::Status status = Decode(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("wrong magic"));

  status = ReadNativeModel(TestData("tiny_am.txt")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), AllOf(HasSubstr("tiny_am.txt"), HasSubstr("wrong magic")));

  bad = file;
  Poke<uint32_t>(&bad, 8, 2);
  Reseal(&bad);
  status = Decode(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("unsupported version 2"));
}

TEST(NativeModelFileTest, InconsistentCountsAreInvalidArgument) {
  const DiagGmmModel model = Synthetic(13);
  const std::string file = EncodeNativeModel(model);
  std::string bad = file;
  Poke<int32_t>(&bad, 16, 12);  // dimension
  Reseal(&bad);
  absl::Status status = Decode(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("inconsistent header: dimension 12"));

  // Counts agree with the size but the offsets disagree with the header.
  bad = file;
  Poke<int64_t>(&bad, 64 + 8 * model.num_states(), model.num_gaussians() - 1);
  Reseal(&bad);
  status = Decode(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("state offsets end at"));

  // A well-formed file whose parameters are not a model: a variance <= 0.
  bad = file;
  const int64_t params_at = 64 + 8 * (model.num_states() + 1) + 4 * 13;
  Poke<float>(&bad, params_at + 4 * (1 + 13), 0.5f);  // v of Gaussian 0, dimension 0
  Reseal(&bad);
  status = Decode(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), AllOf(HasSubstr("m.gmm"), HasSubstr("state 0, Gaussian 0")));

  bad = file;
  bad[50] = 1;  // reserved
  Reseal(&bad);
  EXPECT_THAT(Decode(bad).ToString(), HasSubstr("reserved header bytes are not zero"));
}

}  // namespace
}  // namespace gmmscore
