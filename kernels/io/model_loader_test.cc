#include "kernels/io/model_loader.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/native_model_file.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::TestData;
using ::gmmscore::io_testing::WriteFile;
using ::testing::HasSubstr;

TEST(ModelLoaderTest, DetectsByContentNotExtension) {
  absl::StatusOr<DiagGmmModel> kaldi = ReadKaldiAmDiagGmmText(TestData("tiny_am.txt"));
  ASSERT_TRUE(kaldi.ok()) << kaldi.status();
  // A native file named like text, and Kaldi text named like a native file.
  const std::string native_path = TempPath("model.txt");
  const std::string kaldi_path = TempPath("model.gmm");
  ASSERT_TRUE(WriteNativeModel(*kaldi, native_path).ok());
  WriteFile(kaldi_path, "\n  " + ReadFile(TestData("tiny_am.txt")));

  EXPECT_EQ(*DetectModelFormat(native_path), ModelFormat::kNative);
  EXPECT_EQ(*DetectModelFormat(kaldi_path), ModelFormat::kKaldiText);
  absl::StatusOr<DiagGmmModel> from_native = LoadModel(native_path);
  absl::StatusOr<DiagGmmModel> from_kaldi = LoadModel(kaldi_path);
  ASSERT_TRUE(from_native.ok()) << from_native.status();
  ASSERT_TRUE(from_kaldi.ok()) << from_kaldi.status();
  EXPECT_EQ(from_native->num_gaussians(), 6);
  EXPECT_EQ(from_kaldi->num_gaussians(), 6);
  EXPECT_EQ(from_native->gconst(5), from_kaldi->gconst(5));
}

TEST(ModelLoaderTest, KaldiBinaryIsDetectedAndReadWithErrors) {
  const std::string path = TempPath("final.mdl");
  WriteFile(path, std::string("\0B<TransitionModel> ", 20));
  EXPECT_EQ(*DetectModelFormat(path), ModelFormat::kKaldiBinary);
  const absl::Status status = LoadModel(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.ToString(), HasSubstr("final.mdl"));
}

TEST(ModelLoaderTest, UnknownEmptyAndMissingFiles) {
  const std::string unknown = TempPath("weird");
  WriteFile(unknown, "hello world\n");
  absl::Status status = LoadModel(unknown).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("not a recognised model"));

  const std::string empty = TempPath("empty");
  WriteFile(empty, "");
  status = LoadModel(empty).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("is empty"));

  status = LoadModel(TempPath("missing")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.ToString(), HasSubstr("missing"));
}

TEST(ModelLoaderTest, ReaderErrorsPassThrough) {
  const std::string path = TempPath("cut.mdl");
  const std::string text = ReadFile(TestData("tiny_am.txt"));
  WriteFile(path, text.substr(0, text.size() / 2));
  EXPECT_EQ(LoadModel(path).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gmmscore
