// The lone DiagGmm writer (gmm-global-init-from-feats / gmm-global-est
// output) of kaldi_am_diag_gmm.h, against Kaldi's DiagGmm::Write and through
// the reader.
#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/kaldi_bytes_test_util.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::BinaryHeader;
using ::gmmscore::io_testing::FM;
using ::gmmscore::io_testing::FV;
using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::Tok;
using ::testing::HasSubstr;

// One Gaussian in two dimensions: weight 1, mean 0, variance 1.
KaldiDiagGmm UnitGmm() {
  KaldiDiagGmm gmm;
  gmm.weights = {1.0f};
  gmm.means_invvars = FloatMatrix(1, 2, 0.0f);
  gmm.inv_vars = FloatMatrix(1, 2, 1.0f);
  return gmm;
}

// gconst = log(1) - 0.5 * log(2 pi) * 2, in float as ComputeGconsts.
const float kUnitGconst = static_cast<float>(-std::log(2 * std::numbers::pi));

TEST(KaldiDiagGmmTest, TextMatchesDiagGmmWrite) {
  EXPECT_EQ(FormatKaldiDiagGmmText(UnitGmm()),
            "<DiagGMM> \n<GCONSTS>  [ -1.837877 ]\n<WEIGHTS>  [ 1 ]\n"
            "<MEANS_INVVARS>  [\n  0 0 ]\n<INV_VARS>  [\n  1 1 ]\n</DiagGMM> \n");
}

TEST(KaldiDiagGmmTest, BinaryMatchesDiagGmmWriteByteForByte) {
  EXPECT_EQ(FormatKaldiDiagGmmBinary(UnitGmm()),
            BinaryHeader() + Tok("<DiagGMM>") + Tok("<GCONSTS>") + FV({kUnitGconst}) + Tok("<WEIGHTS>") + FV({1}) +
                Tok("<MEANS_INVVARS>") + FM(1, 2, {0, 0}) + Tok("<INV_VARS>") + FM(1, 2, {1, 1}) +
                Tok("</DiagGMM>"));
}

TEST(KaldiDiagGmmTest, RoundTripsThroughTheReader) {
  const uint64_t seed = std::random_device{}();
  absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
      {.num_states = 1, .min_gaussians = 1, .max_gaussians = 8, .dim = 5, .seed = seed});
  ASSERT_TRUE(model.ok()) << model.status();
  const KaldiDiagGmm expected = DiagGmmModelToKaldi(*model).pdfs[0];
  for (const bool binary : {false, true}) {
    const std::string path = TempPath(binary ? "ubm.bin" : "ubm.txt");
    ASSERT_TRUE(WriteKaldiDiagGmm(*model, path, binary).ok());
    const std::string bytes = ReadFile(path);
    EXPECT_EQ(bytes, binary ? FormatKaldiDiagGmmBinary(expected) : FormatKaldiDiagGmmText(expected));
    absl::StatusOr<KaldiModel> back = ReadKaldiModel(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->binary, binary);
    EXPECT_FALSE(back->transition_model.has_value());
    ASSERT_EQ(back->am.pdfs.size(), 1u);
    EXPECT_EQ(back->am.dim, 5);
    const KaldiDiagGmm& got = back->am.pdfs[0];
    if (binary) {  // float32 arrays come back bit for bit
      EXPECT_EQ(got.weights, expected.weights);
      EXPECT_EQ(got.means_invvars, expected.means_invvars);
      EXPECT_EQ(got.inv_vars, expected.inv_vars);
      continue;
    }
    // Text keeps 7 digits (and the gconsts, recomputed from those, move).
    ASSERT_EQ(got.weights.size(), expected.weights.size());
    ASSERT_EQ(got.means_invvars.rows(), expected.means_invvars.rows());
    for (size_t g = 0; g < expected.weights.size(); ++g) {
      EXPECT_NEAR(got.weights[g], expected.weights[g], 1e-6 * expected.weights[g]);
      for (int d = 0; d < 5; ++d) {
        EXPECT_NEAR(got.means_invvars.at(g, d), expected.means_invvars.at(g, d),
                    1e-6 * std::abs(expected.means_invvars.at(g, d)));
        EXPECT_NEAR(got.inv_vars.at(g, d), expected.inv_vars.at(g, d), 1e-6 * expected.inv_vars.at(g, d));
      }
    }
  }
}

TEST(KaldiDiagGmmTest, WritingAModelOfSeveralStatesIsAnError) {
  absl::StatusOr<DiagGmmModel> model =
      GenerateSyntheticModel({.num_states = 2, .min_gaussians = 2, .max_gaussians = 2, .dim = 3, .seed = 1});
  ASSERT_TRUE(model.ok()) << model.status();
  const absl::Status status = WriteKaldiDiagGmm(*model, TempPath("ubm"), true);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("2 states"));
}

}  // namespace
}  // namespace gmmscore
