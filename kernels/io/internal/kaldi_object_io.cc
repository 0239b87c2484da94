#include "kernels/io/internal/kaldi_object_io.h"

#include <charconv>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/internal/kaldi_text.h"

namespace gmmscore::io_internal {
namespace {

std::string Quote(absl::string_view token) {
  return absl::StrCat("\"", absl::CEscape(token.substr(0, 40)), "\"");
}

class BinaryInput : public KaldiObjectInput {
 public:
  BinaryInput(std::string contents, std::string what)
      : contents_(std::move(contents)), in_(contents_, std::move(what)) {
    in_.SkipBinaryHeader();
  }

  bool binary() const override { return true; }
  absl::StatusOr<std::string> Token(absl::string_view expected) override { return in_.ReadToken(expected); }
  bool NextIsToken() override { return absl::string_view(in_.PeekToken()).substr(0, 1) == "<"; }
  bool AtEnd() override { return in_.at_end(); }
  absl::StatusOr<int32_t> Int32(absl::string_view what) override { return in_.ReadInt32(what); }
  absl::StatusOr<uint16_t> UInt16(absl::string_view what) override { return in_.ReadUInt16(what); }
  absl::StatusOr<double> Double(absl::string_view what) override { return in_.ReadDouble(what); }
  absl::StatusOr<std::vector<double>> DoubleVector(absl::string_view what) override {
    return in_.ReadDoubleVector(what);
  }
  absl::StatusOr<KaldiDoubleMatrix> DoubleMatrix(absl::string_view what) override {
    return in_.ReadDoubleMatrix(what);
  }
  absl::Status Error(absl::string_view problem) const override { return in_.Error(problem); }

 private:
  const std::string contents_;
  KaldiBinaryReader in_;
};

class TextInput : public KaldiObjectInput {
 public:
  TextInput(std::string contents, std::string what)
      : what_(what), in_(InputStream::FromString(std::move(contents), std::move(what))) {}

  bool binary() const override { return false; }

  absl::StatusOr<std::string> Token(absl::string_view expected) override {
    std::string token;
    if (ReadToken(*in_, &token)) return token;
    return absl::DataLossError(absl::StrCat(what_, ", line ", in_->line(), ": ends where ", expected,
                                            " was expected (truncated?)"));
  }

  bool NextIsToken() override {
    SkipWhitespace(*in_);
    return in_->Peek() == '<';
  }

  bool AtEnd() override {
    SkipWhitespace(*in_);
    return in_->Peek() == InputStream::kEof;
  }

  absl::StatusOr<int32_t> Int32(absl::string_view what) override {
    GMM_ASSIGN_OR_RETURN(const std::string token, Token(what));
    const std::optional<int> value = ParseInt(token);
    if (!value.has_value()) return Error(absl::StrCat(what, ": expected an integer, got ", Quote(token)));
    return *value;
  }

  absl::StatusOr<uint16_t> UInt16(absl::string_view what) override {
    GMM_ASSIGN_OR_RETURN(const int32_t value, Int32(what));
    if (value < 0 || value > std::numeric_limits<uint16_t>::max()) {
      return Error(absl::StrCat(what, ": ", value, " is not an unsigned 16-bit integer"));
    }
    return static_cast<uint16_t>(value);
  }

  absl::StatusOr<double> Double(absl::string_view what) override {
    GMM_ASSIGN_OR_RETURN(const std::string token, Token(what));
    absl::string_view digits = token;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    double value = 0.0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
      return Error(absl::StrCat(what, ": expected a number, got ", Quote(token)));
    }
    return value;
  }

  absl::StatusOr<std::vector<double>> DoubleVector(absl::string_view what) override {
    absl::StatusOr<std::vector<float>> values = ReadTextVector(*in_);
    if (!values.ok()) return PrefixStatus(absl::StrCat(what_, ", ", what), values.status());
    return std::vector<double>(values->begin(), values->end());
  }

  absl::StatusOr<KaldiDoubleMatrix> DoubleMatrix(absl::string_view what) override {
    absl::StatusOr<FloatMatrix> matrix = ReadTextMatrix(*in_);
    if (!matrix.ok()) return PrefixStatus(absl::StrCat(what_, ", ", what), matrix.status());
    const absl::Span<const float> values = matrix->span();
    return KaldiDoubleMatrix{matrix->rows(), matrix->cols(), std::vector<double>(values.begin(), values.end())};
  }

  absl::Status Error(absl::string_view problem) const override {
    return absl::InvalidArgumentError(absl::StrCat(what_, ", line ", in_->line(), ": ", problem));
  }

 private:
  const std::string what_;
  std::unique_ptr<InputStream> in_;
};

// `os << value` at precision 7: "%.7g".
void AppendDouble(double value, std::string* out) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general, 7);
  out->append(buffer, result.ptr);
}

}  // namespace

std::unique_ptr<KaldiObjectInput> KaldiObjectInput::Open(std::string contents, std::string what) {
  if (absl::string_view(contents).substr(0, 2) == absl::string_view("\0B", 2)) {
    return std::make_unique<BinaryInput>(std::move(contents), std::move(what));
  }
  return std::make_unique<TextInput>(std::move(contents), std::move(what));
}

absl::Status KaldiObjectInput::ExpectToken(absl::string_view token) {
  GMM_ASSIGN_OR_RETURN(const std::string got, Token(token));
  if (got == token) return absl::OkStatus();
  return Unexpected(token, got);
}

absl::Status KaldiObjectInput::Unexpected(absl::string_view expected, absl::string_view got) {
  const absl::Status error = Error(absl::StrCat("expected ", expected, ", got ", Quote(got)));
  if (!AtEnd()) return error;
  return absl::DataLossError(absl::StrCat(error.message(), " and the input ends there (truncated?)"));
}

KaldiObjectOutput::KaldiObjectOutput(bool binary) : binary_(binary) {
  if (binary_) writer_.Header();
}

void KaldiObjectOutput::Token(absl::string_view token) { writer_.Token(token); }

void KaldiObjectOutput::Int32(int32_t value) {
  if (binary_) return writer_.Basic(value);
  absl::StrAppend(&out_, value, " ");
}

void KaldiObjectOutput::UInt16(uint16_t value) {
  if (binary_) return writer_.Basic(value);
  absl::StrAppend(&out_, value, " ");
}

void KaldiObjectOutput::Double(double value) {
  if (binary_) return writer_.Basic(value);
  AppendDouble(value, &out_);
  out_.push_back(' ');
}

void KaldiObjectOutput::Vector(absl::Span<const float> values) {
  if (binary_) return writer_.Vector(values);
  AppendTextVector(values.data(), static_cast<int64_t>(values.size()), &out_);
}

void KaldiObjectOutput::Vector(absl::Span<const double> values) {
  if (binary_) return writer_.Vector(values);
  out_.append(" [ ");
  for (const double value : values) {
    AppendDouble(value, &out_);
    out_.push_back(' ');
  }
  out_.append("]\n");
}

void KaldiObjectOutput::Matrix(ConstMatrixView matrix) {
  if (binary_) return writer_.Matrix(matrix);
  AppendTextMatrix(matrix, &out_);
}

}  // namespace gmmscore::io_internal
