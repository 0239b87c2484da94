#include "kernels/io/kaldi_gmm_accs.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/internal/kaldi_bytes_test_util.h"
#include "kernels/io/internal/test_util.h"

namespace gmmscore {
namespace {

using ::gmmscore::io_testing::BinaryHeader;
using ::gmmscore::io_testing::DM;
using ::gmmscore::io_testing::DV;
using ::gmmscore::io_testing::F64;
using ::gmmscore::io_testing::FM;
using ::gmmscore::io_testing::FV;
using ::gmmscore::io_testing::I32;
using ::gmmscore::io_testing::ReadFile;
using ::gmmscore::io_testing::TempPath;
using ::gmmscore::io_testing::Tok;
using ::gmmscore::io_testing::U16;
using ::gmmscore::io_testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A global accumulator: dimension 3, 2 Gaussians, flags 7 (mvw).
KaldiAccs GlobalExample() {
  KaldiAccs accs;
  accs.stats = GmmStats::ForShape(3, {0, 2});
  accs.stats.flags = kGmmMeans | kGmmVariances | kGmmWeights;
  accs.stats.occupancy = {10.5, 1.0 / 3.0};
  accs.stats.mean_acc = {1, 2, 3, -0.5, 1e-5, 1234567.8};
  accs.stats.var_acc = {2, 4, 6, 0.25, 1.5, 49};
  accs.stats.total_weight = 10.5 + 1.0 / 3.0;
  return accs;
}

// AccumDiagGmm::Write (text) of GlobalExample: "%.7g" of the float values.
constexpr char kGlobalText[] =
    "<GMMACCS> <VECSIZE> 3 <NUMCOMPONENTS> 2 <FLAGS> 7 <OCCUPANCY>  [ 10.5 0.3333333 ]\n"
    "<MEANACCS>  [\n  1 2 3 \n  -0.5 1e-05 1234568 ]\n"
    "<DIAGVARACCS>  [\n  2 4 6 \n  0.25 1.5 49 ]\n"
    "</GMMACCS> ";

// An acoustic-model accumulator: 2 pdfs of 1 and 2 Gaussians, dimension 2,
// flags 15 (as gmm-acc-stats-ali), 4 transition accumulators.
KaldiAccs AmExample() {
  KaldiAccs accs;
  accs.is_am = true;
  accs.transition_accs = {0, 3, 1.5, 2};
  accs.stats = GmmStats::ForShape(2, {0, 1, 3});
  accs.stats.flags = kGmmAll;
  accs.stats.occupancy = {3, 1.5, 3};
  accs.stats.mean_acc = {1, 2, 0.5, -1, 6, 7};
  accs.stats.var_acc = {3, 4, 0.75, 1, 12, 17};
  accs.stats.total_loglike = -123.456789;
  accs.stats.total_weight = 7.5;
  return accs;
}

// Vector<double>::Write, then AccumAmDiagGmm::Write (text).
constexpr char kAmText[] =
    " [ 0 3 1.5 2 ]\n"
    "<NUMPDFS> 2 "
    "<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 1 <FLAGS> 15 <OCCUPANCY>  [ 3 ]\n"
    "<MEANACCS>  [\n  1 2 ]\n<DIAGVARACCS>  [\n  3 4 ]\n</GMMACCS> "
    "<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 2 <FLAGS> 15 <OCCUPANCY>  [ 1.5 3 ]\n"
    "<MEANACCS>  [\n  0.5 -1 \n  6 7 ]\n<DIAGVARACCS>  [\n  0.75 1 \n  12 17 ]\n</GMMACCS> "
    "<total_like> -123.4568 <total_frames> 7.5 ";

std::string AmBlock(int32_t count, const std::vector<float>& occ, const std::vector<float>& mean,
                    const std::vector<float>& var) {
  return Tok("<GMMACCS>") + Tok("<VECSIZE>") + I32(2) + Tok("<NUMCOMPONENTS>") + I32(count) + Tok("<FLAGS>") +
         U16(15) + Tok("<OCCUPANCY>") + FV(occ) + Tok("<MEANACCS>") + FM(count, 2, mean) + Tok("<DIAGVARACCS>") +
         FM(count, 2, var) + Tok("</GMMACCS>");
}

// AmExample as Kaldi writes it in binary, and where its totals start.
std::string AmBinary(size_t* totals_offset = nullptr) {
  std::string out = BinaryHeader() + DV({0, 3, 1.5, 2}) + Tok("<NUMPDFS>") + I32(2) +
                    AmBlock(1, {3}, {1, 2}, {3, 4}) + AmBlock(2, {1.5, 3}, {0.5, -1, 6, 7}, {0.75, 1, 12, 17});
  if (totals_offset != nullptr) *totals_offset = out.size();
  return out + Tok("<total_like>") + F64(-123.456789) + Tok("<total_frames>") + F64(7.5);
}

std::string Format(const KaldiAccs& accs, bool binary) {
  absl::StatusOr<std::string> bytes = FormatKaldiAccs(accs, binary);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

KaldiAccs Parse(const std::string& bytes) {
  absl::StatusOr<KaldiAccs> accs = ParseKaldiAccs(bytes, "test.acc");
  EXPECT_TRUE(accs.ok()) << accs.status();
  return accs.ok() ? *std::move(accs) : KaldiAccs();
}

// The float32 values Kaldi writes for `values`.
std::vector<double> Rounded(const std::vector<double>& values) {
  std::vector<double> out;
  for (const double v : values) out.push_back(static_cast<float>(v));
  return out;
}

void ExpectSameStats(const KaldiAccs& got, const KaldiAccs& want) {
  EXPECT_EQ(got.is_am, want.is_am);
  EXPECT_EQ(got.transition_accs, want.transition_accs);
  EXPECT_EQ(got.stats.dim, want.stats.dim);
  EXPECT_EQ(got.stats.state_offsets, want.stats.state_offsets);
  EXPECT_EQ(got.stats.num_sets, 1);
  EXPECT_EQ(got.stats.flags, want.stats.flags);
  EXPECT_EQ(got.stats.occupancy, Rounded(want.stats.occupancy));
  EXPECT_EQ(got.stats.mean_acc, Rounded(want.stats.mean_acc));
  EXPECT_EQ(got.stats.var_acc, Rounded(want.stats.var_acc));
}

TEST(KaldiGmmAccsTest, GlobalTextMatchesKaldiWriter) {
  EXPECT_EQ(Format(GlobalExample(), false), kGlobalText);
}

TEST(KaldiGmmAccsTest, AmTextMatchesKaldiWriter) { EXPECT_EQ(Format(AmExample(), false), kAmText); }

TEST(KaldiGmmAccsTest, AmBinaryMatchesKaldiWriterByteForByte) {
  EXPECT_EQ(Format(AmExample(), true), AmBinary());
}

TEST(KaldiGmmAccsTest, GlobalBinaryMatchesKaldiWriterByteForByte) {
  const std::string expected =
      BinaryHeader() + Tok("<GMMACCS>") + Tok("<VECSIZE>") + I32(3) + Tok("<NUMCOMPONENTS>") + I32(2) +
      Tok("<FLAGS>") + U16(7) + Tok("<OCCUPANCY>") + FV({10.5f, 1.0f / 3.0f}) + Tok("<MEANACCS>") +
      FM(2, 3, {1, 2, 3, -0.5f, 1e-5f, 1234567.8f}) + Tok("<DIAGVARACCS>") + FM(2, 3, {2, 4, 6, 0.25f, 1.5f, 49}) +
      Tok("</GMMACCS>");
  EXPECT_EQ(Format(GlobalExample(), true), expected);
  ExpectSameStats(Parse(expected), GlobalExample());
}

TEST(KaldiGmmAccsTest, ReadsKaldiBinaryExactly) {
  const KaldiAccs accs = Parse(AmBinary());
  ExpectSameStats(accs, AmExample());
  EXPECT_EQ(accs.stats.total_loglike, -123.456789);
  EXPECT_EQ(accs.stats.total_weight, 7.5);
}

TEST(KaldiGmmAccsTest, ReadsKaldiTextAndWritesItBack) {
  for (const char* text : {kGlobalText, kAmText}) {
    const KaldiAccs accs = Parse(text);
    EXPECT_EQ(Format(accs, false), text);
  }
  const KaldiAccs am = Parse(kAmText);
  EXPECT_THAT(am.transition_accs, ElementsAre(0, 3, 1.5, 2));
  EXPECT_THAT(am.stats.state_offsets, ElementsAre(0, 1, 3));
  EXPECT_NEAR(am.stats.total_loglike, -123.4568, 1e-9);
  EXPECT_EQ(am.stats.total_weight, 7.5);
}

TEST(KaldiGmmAccsTest, GlobalAccsHaveNoTotalsSoWeightIsTheOccupancySum) {
  const KaldiAccs accs = Parse(kGlobalText);
  EXPECT_FALSE(accs.is_am);
  EXPECT_EQ(accs.stats.num_states(), 1);
  EXPECT_EQ(accs.stats.total_loglike, 0.0);
  EXPECT_DOUBLE_EQ(accs.stats.total_weight, 10.5 + double(0.3333333f));
}

TEST(KaldiGmmAccsTest, OldAmAccsWithoutTotalsAreRead) {
  size_t totals_offset = 0;
  const std::string binary = AmBinary(&totals_offset);
  const KaldiAccs accs = Parse(binary.substr(0, totals_offset));
  EXPECT_EQ(accs.stats.total_loglike, 0.0);
  EXPECT_EQ(accs.stats.total_weight, 7.5);  // 3 + 1.5 + 3
}

TEST(KaldiGmmAccsTest, AcceptsTokensInAnyOrderDoublesAndAbsentAccumulators) {
  // Variances first, means as "DM", occupancy as "DV", flags m|v only (which
  // Kaldi augments with w).
  const std::string binary = BinaryHeader() + Tok("<GMMACCS>") + Tok("<VECSIZE>") + I32(2) +
                             Tok("<NUMCOMPONENTS>") + I32(1) + Tok("<FLAGS>") + U16(3) + Tok("<DIAGVARACCS>") +
                             FM(1, 2, {5, 6}) + Tok("<MEANACCS>") + DM(1, 2, {0.1, 0.2}) + Tok("<OCCUPANCY>") +
                             DV({2.5}) + Tok("</GMMACCS>");
  const KaldiAccs accs = Parse(binary);
  EXPECT_EQ(accs.stats.flags, kGmmMeans | kGmmVariances | kGmmWeights);
  EXPECT_THAT(accs.stats.occupancy, ElementsAre(2.5));
  EXPECT_THAT(accs.stats.mean_acc, ElementsAre(0.1, 0.2));  // doubles kept
  EXPECT_THAT(accs.stats.var_acc, ElementsAre(5, 6));

  // Weights only: no mean or variance accumulators, written as empty
  // matrices and read (present, empty or absent) as zeros.
  const std::string text = "<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 1 <FLAGS> 4 <OCCUPANCY>  [ 3 ]\n</GMMACCS> ";
  const KaldiAccs weights_only = Parse(text);
  EXPECT_EQ(weights_only.stats.flags, kGmmWeights);
  EXPECT_THAT(weights_only.stats.mean_acc, ElementsAre(0, 0));
  EXPECT_EQ(Format(weights_only, false),
            "<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 1 <FLAGS> 4 <OCCUPANCY>  [ 3 ]\n"
            "<MEANACCS>  [ ]\n<DIAGVARACCS>  [ ]\n</GMMACCS> ");
  ExpectSameStats(Parse(Format(weights_only, true)), weights_only);
}

TEST(KaldiGmmAccsTest, FlagsAreAugmentedAsKaldiDoes) {
  KaldiAccs accs = GlobalExample();
  accs.stats.flags = kGmmVariances;  // v needs m, m needs w
  EXPECT_THAT(Format(accs, false), HasSubstr("<FLAGS> 7 "));
  accs.stats.flags = 0;  // w is always on
  EXPECT_THAT(Format(accs, false), HasSubstr("<FLAGS> 4 <OCCUPANCY>  [ 10.5 0.3333333 ]\n<MEANACCS>  [ ]\n"));
}

KaldiAccs RandomAccs(bool is_am, std::mt19937& rng) {
  std::uniform_int_distribution<int> count(1, 4);
  std::normal_distribution<double> value(0.0, 100.0);
  std::vector<int64_t> offsets{0};
  const int states = is_am ? count(rng) + 1 : 1;
  for (int s = 0; s < states; ++s) offsets.push_back(offsets.back() + count(rng));
  KaldiAccs accs;
  accs.is_am = is_am;
  accs.stats = GmmStats::ForShape(count(rng), offsets);
  accs.stats.flags = is_am ? kGmmAll : kGmmMeans | kGmmVariances | kGmmWeights;
  for (auto* values : {&accs.stats.occupancy, &accs.stats.mean_acc, &accs.stats.var_acc}) {
    for (double& v : *values) v = value(rng);
  }
  if (is_am) {
    accs.transition_accs.resize(count(rng) * 3);
    for (double& v : accs.transition_accs) v = std::abs(value(rng));
    accs.stats.total_loglike = value(rng) * 1000;
  }
  accs.stats.total_weight = std::abs(value(rng));
  return accs;
}

TEST(KaldiGmmAccsTest, RoundTripsTextAndBinaryGlobalAndAm) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    const KaldiAccs accs = RandomAccs(trial % 2 == 1, rng);
    // Binary keeps every float32 value and the float64 vectors and totals.
    const KaldiAccs binary = Parse(Format(accs, true));
    ExpectSameStats(binary, accs);
    if (accs.is_am) EXPECT_EQ(binary.stats.total_loglike, accs.stats.total_loglike);
    EXPECT_EQ(Format(binary, true), Format(accs, true));
    // Text keeps 7 digits: the text is stable and the values close.
    const std::string text = Format(accs, false);
    const KaldiAccs from_text = Parse(text);
    EXPECT_EQ(Format(from_text, false), text);
    for (size_t i = 0; i < accs.stats.mean_acc.size(); ++i) {
      EXPECT_NEAR(from_text.stats.mean_acc[i], accs.stats.mean_acc[i], 1e-6 * std::abs(accs.stats.mean_acc[i]));
    }
  }
}

TEST(KaldiGmmAccsTest, WritesAndReadsFiles) {
  const std::string path = TempPath("a.acc");
  ASSERT_TRUE(WriteKaldiAccs(AmExample(), path, true).ok());
  EXPECT_EQ(ReadFile(path), AmBinary());
  absl::StatusOr<KaldiAccs> accs = ReadKaldiAccs(path);
  ASSERT_TRUE(accs.ok()) << accs.status();
  ExpectSameStats(*accs, AmExample());
  EXPECT_EQ(ReadKaldiAccs(TempPath("missing.acc")).status().code(), absl::StatusCode::kNotFound);
}

TEST(KaldiGmmAccsTest, EveryTruncationOfABinaryFileIsAnError) {
  size_t totals_offset = 0;
  const std::string binary = AmBinary(&totals_offset);
  for (size_t n = 0; n < binary.size(); ++n) {
    const absl::StatusOr<KaldiAccs> accs = ParseKaldiAccs(binary.substr(0, n), "cut.acc");
    if (n == totals_offset) {  // a complete accumulator from before <total_like>
      EXPECT_TRUE(accs.ok()) << accs.status();
      continue;
    }
    ASSERT_FALSE(accs.ok()) << "prefix of " << n << " bytes";
    EXPECT_THAT(accs.status().code(),
                testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument))
        << accs.status();
    EXPECT_THAT(accs.status().message(), HasSubstr("cut.acc"));
    if (n > 2) EXPECT_EQ(accs.status().code(), absl::StatusCode::kDataLoss) << n << ": " << accs.status();
  }
}

TEST(KaldiGmmAccsTest, DamagedBytesGiveErrorsNotCrashes) {
  std::mt19937 rng(std::random_device{}());
  const std::string binary = AmBinary();
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = binary;
    for (int k = 1 + trial % 3; k > 0; --k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    const absl::StatusOr<KaldiAccs> accs = ParseKaldiAccs(damaged, "damaged.acc");
    if (!accs.ok()) {
      EXPECT_THAT(accs.status().code(),
                  testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument))
          << accs.status();
    }
  }
}

// A text cut inside a number or token can still parse ("1" for "15"); every
// cut after whitespace before the totals is DATA_LOSS.
TEST(KaldiGmmAccsTest, EveryTruncationOfATextFileFailsCleanly) {
  const std::string text = kAmText;
  const size_t totals = text.find("<total_like>");
  for (size_t n = 0; n < text.size(); ++n) {
    const absl::StatusOr<KaldiAccs> accs = ParseKaldiAccs(text.substr(0, n), "cut.acc");
    if (n < totals && (n == 0 || text[n - 1] == ' ' || text[n - 1] == '\n')) {
      EXPECT_EQ(accs.status().code(), absl::StatusCode::kDataLoss) << n << ": " << accs.status();
    } else if (!accs.ok()) {
      EXPECT_THAT(accs.status().code(),
                  testing::AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument))
          << accs.status();
    }
  }
}

TEST(KaldiGmmAccsTest, MalformedContentIsInvalidArgument) {
  auto error = [](const std::string& text) { return ParseKaldiAccs(text, "bad.acc").status(); };
  const std::string head = "<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 1 <FLAGS> 7 ";
  const std::string body = "<OCCUPANCY>  [ 3 ]\n<MEANACCS>  [\n  1 2 ]\n<DIAGVARACCS>  [\n  3 4 ]\n</GMMACCS> ";
  EXPECT_TRUE(error(head + body).ok());
  EXPECT_THAT(error(head + body + "<GMMACCS> ").message(), HasSubstr("unexpected content"));
  EXPECT_THAT(error(head + "<OCCUPANCY>  [ 3 4 ]\n</GMMACCS> ").message(), HasSubstr("2 values, expected 1"));
  EXPECT_THAT(error(head + "<MEANACCS>  [\n  1 2 3 ]\n</GMMACCS> ").message(), HasSubstr("matrix is 1 x 3"));
  EXPECT_THAT(error(head + "<OCCUPANCY>  [ 3 ]\n<OCCUPANCY>  [ 3 ]\n</GMMACCS> ").message(), HasSubstr("repeated"));
  EXPECT_THAT(error(head + "<WEIGHTS>  [ 3 ]\n</GMMACCS> ").message(),
              HasSubstr("<DIAGVARACCS> or </GMMACCS>, got \"<WEIGHTS>\""));
  EXPECT_THAT(error("<GMMACCS> <VECSIZE> 2 <NUMCOMPONENTS> 1 <FLAGS> 16 " + body).message(), HasSubstr("bits"));
  EXPECT_THAT(error("<GMMACCS> <VECSIZE> 0 <NUMCOMPONENTS> 1 <FLAGS> 7 " + body).message(),
              HasSubstr("must be positive"));
  EXPECT_THAT(error("<GMMACCS> <VECSIZE> two").message(), HasSubstr("expected an integer"));
  // Damaged sizes are refused before the omitted accumulators are zero-filled.
  EXPECT_THAT(error("<GMMACCS> <VECSIZE> 100000 <NUMCOMPONENTS> 100000 <FLAGS> 4 </GMMACCS> ").message(),
              HasSubstr("implausibly large"));
  const absl::Status pdf_error = error(" [ ]\n<NUMPDFS> 2 " + head + body +
                                       "<GMMACCS> <VECSIZE> 3 <NUMCOMPONENTS> 1 <FLAGS> 7 " + body);
  EXPECT_EQ(pdf_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(pdf_error.message(), AllOf(HasSubstr("bad.acc"), HasSubstr("pdf 1 of 2 has dimension 3")));
  // Binary flags must be the uint16 Kaldi writes (size byte -2).
  std::string binary = AmBinary();
  binary.replace(binary.find("<FLAGS> ") + 8, 3, I32(15).substr(0, 3));
  EXPECT_THAT(error(binary).message(), HasSubstr("unsigned 2-byte integer"));
}

KaldiAccs WithStates(std::vector<int64_t> offsets, int dim = 2) {
  KaldiAccs accs;
  accs.is_am = true;
  accs.stats = GmmStats::ForShape(dim, std::move(offsets));
  accs.stats.flags = kGmmAll;
  accs.transition_accs.assign(5, 1.0);
  return accs;
}

TEST(KaldiGmmAccsTest, AddSumsEverything) {
  KaldiAccs sum = AmExample();
  ASSERT_TRUE(AddKaldiAccs(AmExample(), &sum).ok());
  EXPECT_THAT(sum.transition_accs, ElementsAre(0, 6, 3, 4));
  EXPECT_THAT(sum.stats.occupancy, ElementsAre(6, 3, 6));
  EXPECT_EQ(sum.stats.var_acc[5], 34);
  EXPECT_EQ(sum.stats.total_weight, 15);
}

TEST(KaldiGmmAccsTest, AddingMismatchedAccumulatorsNamesBoth) {
  auto add = [](const KaldiAccs& other, KaldiAccs sum) {
    return AddKaldiAccs(other, &sum, "accumulator 'b.acc'", "accumulator 'a.acc'");
  };
  const KaldiAccs three = WithStates({0, 1, 2, 3});
  EXPECT_THAT(add(WithStates({0, 1, 2, 3, 4}), three).message(),
              HasSubstr("accumulator 'b.acc' has 4 pdfs, accumulator 'a.acc' has 3"));
  EXPECT_THAT(add(WithStates({0, 1, 2, 3}, 3), three).message(), HasSubstr("has dimension 3"));
  EXPECT_THAT(add(WithStates({0, 1, 3, 4}), three).message(),
              HasSubstr("pdf 1 has 2 Gaussians in accumulator 'b.acc', 1 in accumulator 'a.acc'"));
  KaldiAccs global = GlobalExample();
  EXPECT_THAT(add(global, three).message(), HasSubstr("is a global accumulator"));
  KaldiAccs other_flags = three;
  other_flags.stats.flags = kGmmMeans | kGmmWeights;
  EXPECT_THAT(add(other_flags, three).message(), HasSubstr("has flags 5"));
  KaldiAccs other_transitions = three;
  other_transitions.transition_accs.push_back(1);
  EXPECT_THAT(add(other_transitions, three).message(), HasSubstr("6 transition accumulators"));
  EXPECT_EQ(add(other_transitions, three).code(), absl::StatusCode::kInvalidArgument);
}

TEST(KaldiGmmAccsTest, SumsFilesAsGmmSumAccs) {
  const std::string a = TempPath("a.acc"), b = TempPath("b.acc"), c = TempPath("c.acc");
  WriteFile(a, AmBinary());
  WriteFile(b, kAmText);
  absl::StatusOr<KaldiAccs> sum = SumKaldiAccsFiles({a, b});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT(sum->stats.occupancy, ElementsAre(6, 3, 6));
  EXPECT_NEAR(sum->stats.total_loglike, -246.913589, 1e-4);
  WriteFile(c, kGlobalText);
  EXPECT_THAT(SumKaldiAccsFiles({a, c}).status().message(),
              AllOf(HasSubstr("'" + c + "' is a global accumulator"), HasSubstr(a)));
  EXPECT_EQ(SumKaldiAccsFiles({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KaldiGmmAccsTest, FormatRejectsStatisticsKaldiCannotHold) {
  KaldiAccs two_sets = GlobalExample();
  two_sets.stats = GmmStats::ForShape(3, {0, 2}, /*num_sets=*/2);
  EXPECT_EQ(FormatKaldiAccs(two_sets, true).status().code(), absl::StatusCode::kInvalidArgument);
  KaldiAccs global_two_states = WithStates({0, 1, 2});
  global_two_states.is_am = false;
  EXPECT_EQ(FormatKaldiAccs(global_two_states, false).status().code(), absl::StatusCode::kInvalidArgument);
  KaldiAccs short_arrays = GlobalExample();
  short_arrays.stats.var_acc.pop_back();
  EXPECT_THAT(WriteKaldiAccs(short_arrays, TempPath("x.acc"), true).message(), HasSubstr("x.acc"));
}

}  // namespace
}  // namespace gmmscore
