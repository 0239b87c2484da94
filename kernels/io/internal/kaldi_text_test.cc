#include "kernels/io/internal/kaldi_text.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore::io_internal {
namespace {

using ::testing::HasSubstr;

std::string Format(float value) {
  std::string out;
  AppendFloat(value, &out);
  return out;
}

// What a Kaldi output stream prints: operator<< after InitKaldiOutputStream
// set precision 7.
std::string KaldiStreamFormat(float value) {
  std::ostringstream os;
  os.precision(7);
  os << value;
  return os.str();
}

TEST(KaldiTextTest, FloatsPrintAsAKaldiStreamDoes) {
  EXPECT_EQ(Format(0.1f), "0.1");
  EXPECT_EQ(Format(1.0f), "1");
  EXPECT_EQ(Format(-0.5f), "-0.5");
  EXPECT_EQ(Format(1e-5f), "1e-05");
  EXPECT_EQ(Format(3.14159265f), "3.141593");
  EXPECT_EQ(Format(123456789.0f), "1.234568e+08");
  EXPECT_EQ(Format(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(Format(-std::numeric_limits<float>::infinity()), "-inf");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (int i = 0; i < 20000; ++i) {
    const float value = std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(Format(value), KaldiStreamFormat(value)) << value;
  }
}

TEST(KaldiTextTest, ParsesWhatKaldiAccepts) {
  EXPECT_EQ(ParseFloat("1.5"), 1.5f);
  EXPECT_EQ(ParseFloat("+1.5"), 1.5f);
  EXPECT_EQ(ParseFloat("-2e-3"), -2e-3f);
  EXPECT_TRUE(std::isnan(*ParseFloat("nan")));
  EXPECT_TRUE(std::isnan(*ParseFloat("-nan")));
  EXPECT_EQ(ParseFloat("-inf"), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(ParseFloat("1e999"), std::numeric_limits<float>::infinity());
  EXPECT_FALSE(ParseFloat("abc").has_value());
  EXPECT_FALSE(ParseFloat("1.5x").has_value());
  EXPECT_FALSE(ParseFloat("").has_value());
  EXPECT_EQ(ParseInt("39"), 39);
  EXPECT_FALSE(ParseInt("39.0").has_value());
  EXPECT_FALSE(ParseInt("99999999999").has_value());
}

TEST(KaldiTextTest, MatrixRoundTripsThroughText) {
  FloatMatrix matrix(2, 3);
  for (int i = 0; i < 6; ++i) matrix.data()[i] = 0.25f * i - 0.5f;
  std::string text;
  AppendTextMatrix(matrix.view(), &text);
  EXPECT_EQ(text, " [\n  -0.5 -0.25 0 \n  0.25 0.5 0.75 ]\n");
  auto in = InputStream::FromString(text, "m");
  absl::StatusOr<FloatMatrix> parsed = ReadTextMatrix(*in);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, matrix);
  EXPECT_EQ(in->Peek(), InputStream::kEof);  // the newline after ']' is consumed
}

TEST(KaldiTextTest, EmptyMatrixAndVector) {
  std::string text;
  AppendTextMatrix(FloatMatrix().view(), &text);
  EXPECT_EQ(text, " [ ]\n");
  auto in = InputStream::FromString(text + "[]", "m");
  EXPECT_EQ(ReadTextMatrix(*in)->rows(), 0);
  EXPECT_EQ(ReadTextMatrix(*in)->rows(), 0);
  std::string vector_text;
  AppendTextVector(nullptr, 0, &vector_text);
  EXPECT_EQ(vector_text, " [ ]\n");
}

TEST(KaldiTextTest, MatrixErrorsSayWhatAndWhere) {
  auto ragged = InputStream::FromString("[\n  1 2 3 \n  4 5 ]\n", "m");
  absl::Status status = ReadTextMatrix(*ragged).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("row 1 has 2 values but earlier rows have 3"));
  EXPECT_THAT(status.ToString(), HasSubstr("line 3"));

  auto bad = InputStream::FromString("[\n  1 2 3 \n  4 x 6 ]\n", "m");
  status = ReadTextMatrix(*bad).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.ToString(), HasSubstr("expected a number in matrix row 1, got \"x\""));
  EXPECT_THAT(status.ToString(), HasSubstr("line 3"));

  auto truncated = InputStream::FromString("[\n  1 2 3 \n  4 5", "m");
  status = ReadTextMatrix(*truncated).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.ToString(), HasSubstr("truncated"));

  auto no_bracket = InputStream::FromString("1 2 3", "m");
  EXPECT_THAT(ReadTextMatrix(*no_bracket).status().ToString(), HasSubstr("expected \"[\""));
}

}  // namespace
}  // namespace gmmscore::io_internal
