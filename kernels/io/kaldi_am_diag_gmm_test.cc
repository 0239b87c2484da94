#include "kernels/io/kaldi_am_diag_gmm.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/test_util.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::TestData;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The natural parameters tiny_am.txt was generated from (make_tiny_am.py),
// written out again here so the check does not go through the parser.
struct Gaussian {
  double weight;
  double mean[3];
  double var[3];
};
const std::vector<std::vector<Gaussian>> kTinyPdfs = {
    {{1.0, {0.5, -1.0, 2.0}, {1.0, 2.0, 0.5}}},
    {{0.25, {1.0, 0.0, -2.0}, {0.25, 1.0, 4.0}}, {0.75, {-0.5, 1.5, 0.25}, {2.0, 2.0, 1.0}}},
    {{0.5, {0.0, 0.0, 0.0}, {0.5, 0.5, 0.5}},
     {0.25, {3.0, -1.25, 0.5}, {8.0, 1.0, 0.125}},
     {0.25, {-2.0, 0.5, -4.0}, {1.0, 0.25, 2.0}}},
};

// log sum_g w_g N(x; mu_g, var_g), in float64 straight from the definition.
double TinyLogLikelihood(int pdf, const float* x) {
  double max = -INFINITY;
  std::vector<double> terms;
  for (const Gaussian& g : kTinyPdfs[pdf]) {
    double term = std::log(g.weight);
    for (int d = 0; d < 3; ++d) {
      const double diff = x[d] - g.mean[d];
      term -= 0.5 * (std::log(2 * std::numbers::pi * g.var[d]) + diff * diff / g.var[d]);
    }
    terms.push_back(term);
    max = std::max(max, term);
  }
  double sum = 0.0;
  for (double term : terms) sum += std::exp(term - max);
  return max + std::log(sum);
}

FloatMatrix TinyFeatures() {
  const float values[] = {0.1f, -0.5f, 1.5f, 1.0f,  0.25f, -2.0f, -1.5f, 2.0f, 0.75f,
                          0.0f, 0.0f,  0.0f, 2.5f, -1.0f, -3.0f, 9.0f,  -7.0f, 4.0f};
  FloatMatrix features(6, 3);
  std::copy(std::begin(values), std::end(values), features.data());
  return features;
}

std::string TinyText() { return ReadFile(TestData("tiny_am.txt")); }

absl::Status ParseText(const std::string& text) {
  return DecodeKaldiAmDiagGmm(text, "bad.mdl").status();
}

TEST(KaldiAmDiagGmmTest, FixtureMatchesIndependentFloat64Likelihoods) {
  absl::StatusOr<DiagGmmModel> model = ReadKaldiAmDiagGmmText(TestData("tiny_am.txt"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->dim(), 3);
  EXPECT_EQ(model->num_states(), 3);
  EXPECT_EQ(model->num_gaussians(), 6);
  EXPECT_EQ(model->num_gaussians_in_state(2), 3);
  // Natural parameters come back.
  const NaturalGaussian second = model->Natural(2);
  EXPECT_NEAR(second.weight, 0.75, 1e-6);
  EXPECT_NEAR(second.mean[1], 1.5, 1e-6);
  EXPECT_NEAR(second.variance[2], 1.0, 1e-6);

  const FloatMatrix features = TinyFeatures();
  const std::vector<double> scores = ReferenceLogLikelihoods(*model, features.view());
  for (int64_t t = 0; t < features.rows(); ++t) {
    for (int s = 0; s < 3; ++s) {
      EXPECT_NEAR(scores[t * 3 + s], TinyLogLikelihood(s, features.row(t)), 1e-4)
          << "frame " << t << " state " << s;
    }
  }
}

TEST(KaldiAmDiagGmmTest, FormatsByteForByteAsKaldiWrites) {
  const std::string text = TinyText();
  absl::StatusOr<KaldiAmDiagGmm> kaldi = ParseKaldiAmDiagGmmText(text, "tiny_am.txt");
  ASSERT_TRUE(kaldi.ok()) << kaldi.status();
  EXPECT_EQ(FormatKaldiAmDiagGmmText(*kaldi), text);
}

TEST(KaldiAmDiagGmmTest, SkipsALeadingTransitionModel) {
  const std::string transition_model =
      "<TransitionModel> \n<Topology> \n<TopologyEntry> \n<ForPhones> \n1 2 \n</ForPhones> \n"
      "<State> 0 <PdfClass> 0 <Transition> 0 0.75 <Transition> 1 0.25 </State> \n"
      "<State> 1 </State> \n</TopologyEntry> \n</Topology> \n<Triples> 2 \n1 0 0 \n2 0 1 \n"
      "</Triples> \n<LogProbs> \n [ 0 -0.2876821 -1.386294 -0.2876821 -1.386294 ]\n</LogProbs> \n</TransitionModel> \n";
  absl::StatusOr<DiagGmmModel> model = DecodeKaldiAmDiagGmm(transition_model + TinyText(), "final.mdl");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_states(), 3);
}

TEST(KaldiAmDiagGmmTest, DropsZeroWeightGaussians) {
  std::string text = TinyText();
  text = absl::StrReplaceAll(text, {{"<WEIGHTS>  [ 0.25 0.75 ]", "<WEIGHTS>  [ 0 1 ]"}});
  absl::StatusOr<DiagGmmModel> model = DecodeKaldiAmDiagGmm(text, "zero.mdl");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_gaussians_in_state(1), 1);
  EXPECT_NEAR(model->Natural(1).mean[1], 1.5, 1e-6);
}

void ExpectRoundTripScoresMatch(int dim) {
  SCOPED_TRACE(absl::StrCat("dim ", dim));
  absl::StatusOr<DiagGmmModel> model = GenerateSyntheticModel(
      {.num_states = 25, .min_gaussians = 1, .max_gaussians = 9, .dim = dim, .seed = 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = TempPath(absl::StrCat("synthetic_", dim, ".mdl"));
  ASSERT_TRUE(WriteKaldiAmDiagGmmText(*model, path).ok());
  absl::StatusOr<DiagGmmModel> loaded = ReadKaldiAmDiagGmmText(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->num_states(), model->num_states());
  for (int s = 0; s < model->num_states(); ++s) {
    ASSERT_EQ(loaded->num_gaussians_in_state(s), model->num_gaussians_in_state(s));
  }
  const FloatMatrix features = GenerateSyntheticFeatures(*model, 40, 8);
  const std::vector<double> before = ReferenceLogLikelihoods(*model, features.view());
  const std::vector<double> after = ReferenceLogLikelihoods(*loaded, features.view());
  // Kaldi's text keeps 7 significant digits; at MFCC scale that moves a
  // log-likelihood by well under 1e-3 relative to its size.
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_NEAR(after[i], before[i], 1e-5 * std::max(1.0, std::abs(before[i]))) << i;
  }
}

TEST(KaldiAmDiagGmmTest, SyntheticModelsRoundTripThroughText) {
  ExpectRoundTripScoresMatch(13);
  ExpectRoundTripScoresMatch(39);
}

TEST(KaldiAmDiagGmmTest, MissingFileIsNotFound) {
  const absl::Status status = ReadKaldiAmDiagGmmText(TempPath("missing.mdl")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.ToString(), HasSubstr("missing.mdl"));
}

TEST(KaldiAmDiagGmmTest, TruncatedBinaryModelIsDataLoss) {
  const absl::Status status = ParseText(std::string("\0B<DIMENSION> ", 14));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.ToString(), AllOf(HasSubstr("bad.mdl"), HasSubstr("the dimension")));
}

TEST(KaldiAmDiagGmmTest, TruncationAnywhereIsDataLoss) {
  const std::string text = TinyText();
  // Cut points: in the header, inside a vector, inside a matrix, before the
  // closing tag, and between pdfs.
  for (const std::string marker : {"<NUMPDFS>", "-6.64311", "0.75 0.25 ]",
                                   "</DiagGMM> \n<DiagGMM> \n<GCONSTS>  [ -2.4", "0.125 1 8"}) {
    const size_t cut = text.find(marker);
    ASSERT_NE(cut, std::string::npos) << marker;
    const absl::Status status = ParseText(text.substr(0, cut + 3));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << marker << ": " << status;
    EXPECT_THAT(status.ToString(), AllOf(HasSubstr("bad.mdl"), HasSubstr("truncated"))) << marker;
  }
  // Every other cut gives some error and never crashes.
  // (Only the final "</DiagGMM>" may lose its trailing " \n".)
  for (size_t cut = 0; cut + 2 < text.size(); ++cut) {
    EXPECT_FALSE(ParseText(text.substr(0, cut)).ok()) << cut;
  }
}

TEST(KaldiAmDiagGmmTest, MalformedContentNamesFilePdfAndProblem) {
  const std::string text = TinyText();
  struct Case {
    std::string from, to;
    std::string expected;  // in the message
  };
  const Case cases[] = {
      {"<WEIGHTS>  [ 0.25 0.75", "<WEIGHT>  [ 0.25 0.75", "pdf 1: expected <WEIGHTS>, got \"<WEIGHT>\""},
      {"<DIMENSION> 3", "<DIMENSION> three", "expected the dimension (a positive integer)"},
      {"0.375 -1.25 4", "0.375 -1.2x5 4", "expected a number in matrix row 1, got \"-1.2x5\""},
      {"  4 0 -0.5 \n", "  4 nan -0.5 \n", "pdf 1, Gaussian 0: <MEANS_INVVARS> value nan in dimension 1 is not finite"},
      {"  0.5 0.5 1 ]", "  0.5 0 1 ]", "pdf 1, Gaussian 1: <INV_VARS> value 0 in dimension 1"},
      {"  0.5 0.5 1 ]", "  0.5 -2 1 ]", "<INV_VARS> value -2"},
      {"[ 0.25 0.75 ]", "[ 0.25 0.5 ]", "pdf 1: weights sum to 0.750000, not 1"},
      {"[ 0.25 0.75 ]", "[ -0.25 1.25 ]", "pdf 1, Gaussian 0: weight -0.25 is not a probability"},
      {"  4 0 -0.5 \n", "", "pdf 1, <MEANS_INVVARS> (from line 12): matrix is 1 x 3, expected 2 x 3"},
      {"  4 0 -0.5 \n", "  4 0 \n", "row 1 has 3 values but earlier rows have 2"},
      {"<GCONSTS>  [ -6.64311 -4.393895 ]", "<GCONSTS>  [ -6.64311 ]", "<GCONSTS> has 1 values but <WEIGHTS> has 2"},
      {"<NUMPDFS> 3", "<NUMPDFS> 2", "after the last of 2 pdfs"},
      {"<NUMPDFS> 3", "<NUMPDFS> 0", "expected the number of pdfs (a positive integer)"},
      {"</DiagGMM> \n<DiagGMM> \n<GCONSTS>  [ -2", "</DiagGMM> \n<Diag> \n<GCONSTS>  [ -2", "pdf 2: expected <DiagGMM>"},
  };
  for (const Case& c : cases) {
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    std::string bad = text;
    bad.replace(at, c.from.size(), c.to);
    const absl::Status status = ParseText(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.expected << ": " << status;
    EXPECT_THAT(status.ToString(), AllOf(HasSubstr("Kaldi model 'bad.mdl'"), HasSubstr(c.expected)))
        << status;
  }
}

TEST(KaldiAmDiagGmmTest, ExtraRowInNumPdfsIsTruncation) {
  std::string text = TinyText();
  text.replace(text.find("<NUMPDFS> 3"), 11, "<NUMPDFS> 4");
  const absl::Status status = ParseText(text);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.ToString(), HasSubstr("<DiagGMM> of pdf 3 of 4"));
}

}  // namespace
}  // namespace gmmscore
