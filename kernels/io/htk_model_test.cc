// HTK MMF and parameter-file readers on crafted files in HTK's documented
// syntax (HTK Book ch. 7), and on damaged ones.
#include "kernels/io/htk_model.h"

#include <cmath>

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
  compressed[10] |= 0x04;  // _C
  EXPECT_EQ(DecodeHtkParameterFile(compressed, "f").status().code(), absl::StatusCode::kUnimplemented);
  std::string swapped = bytes;
  std::swap(swapped[8], swapped[9]);  // sample size byte-swapped
  EXPECT_EQ(DecodeHtkParameterFile(swapped, "f").status().code(), absl::StatusCode::kDataLoss);  // 2048-byte frames
  EXPECT_THAT(DecodeHtkParameterFile(bytes + "xyz", "f").status().message(), HasSubstr("3 bytes after"));
}

}  // namespace
}  // namespace gmmscore
