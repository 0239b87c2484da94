#include "kernels/io/internal/kaldi_text.h"

#include <charconv>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gmmscore::io_internal {
namespace {

absl::Status LineError(const InputStream& in, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", in.line(), ": ", what));
}

absl::Status EndsEarly(const InputStream& in, absl::string_view inside) {
  if (!in.status().ok()) return in.status();
  return absl::DataLossError(
      absl::StrCat("line ", in.line(), ": input ends inside ", inside, " (truncated?)"));
}

// Reads bytes up to whitespace, '[' or ']' (Kaldi writes a space before ']',
// but hand-written files may not).
void ReadNumberToken(InputStream& in, std::string* token) {
  token->clear();
  while (true) {
    const int c = in.Peek();
    if (c == InputStream::kEof || IsKaldiSpace(c) || c == '[' || c == ']') return;
    token->push_back(static_cast<char>(in.Get()));
    if (token->size() > 64) return;  // no number is this long; report it
  }
}

// Printable form of a token for messages (bounded, control bytes escaped).
std::string Quote(absl::string_view token) {
  if (token.size() > 40) token = token.substr(0, 40);
  return absl::StrCat("\"", absl::CEscape(token), "\"");
}

}  // namespace

void SkipWhitespace(InputStream& in) {
  while (IsKaldiSpace(in.Peek())) in.Get();
}

bool ReadToken(InputStream& in, std::string* token) {
  SkipWhitespace(in);
  token->clear();
  while (true) {
    const int c = in.Peek();
    if (c == InputStream::kEof || IsKaldiSpace(c)) break;
    token->push_back(static_cast<char>(in.Get()));
  }
  return !token->empty();
}

std::optional<float> ParseFloat(absl::string_view token) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token.empty()) return std::nullopt;
  float value = 0.0f;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (end == token.data() + token.size() && error == std::errc()) return value;
  // from_chars reports out-of-range for overflow and for denormal underflow;
  // like strtof (and so Kaldi), overflow is infinite and underflow is zero.
  if (end == token.data() + token.size() && error == std::errc::result_out_of_range) {
    const double wide = std::strtod(std::string(token).c_str(), nullptr);
    return static_cast<float>(wide);
  }
  return std::nullopt;
}

std::optional<int> ParseInt(absl::string_view token) {
  int value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

absl::StatusOr<std::vector<float>> ReadTextVector(InputStream& in) {
  std::string token;
  if (!ReadToken(in, &token)) return EndsEarly(in, "a vector");
  if (token == "[]") return std::vector<float>();
  if (token != "[") return LineError(in, absl::StrCat("expected \"[\" to open a vector, got ", Quote(token)));
  std::vector<float> values;
  while (true) {
    SkipWhitespace(in);
    const int c = in.Peek();
    if (c == InputStream::kEof) return EndsEarly(in, "a vector");
    if (c == ']') {
      in.Get();
      return values;
    }
    ReadNumberToken(in, &token);
    const std::optional<float> value = ParseFloat(token);
    if (!value.has_value()) {
      if (in.Peek() == InputStream::kEof) return EndsEarly(in, "a vector");
      if (token.empty()) token.push_back(static_cast<char>(in.Get()));
      return LineError(in, absl::StrCat("expected a number, got ", Quote(token)));
    }
    values.push_back(*value);
  }
}

absl::StatusOr<FloatMatrix> ReadTextMatrix(InputStream& in) {
  std::string token;
  if (!ReadToken(in, &token)) return EndsEarly(in, "a matrix");
  if (token == "[]") return FloatMatrix();
  if (token != "[") return LineError(in, absl::StrCat("expected \"[\" to open a matrix, got ", Quote(token)));
  std::vector<float> values;
  int64_t cols = -1;
  int64_t rows = 0;
  int64_t row_size = 0;
  // Closes the current row if it has values; rows must agree in length.
  auto end_row = [&]() -> absl::Status {
    if (row_size == 0) return absl::OkStatus();
    if (cols >= 0 && row_size != cols) {
      return LineError(in, absl::StrCat("matrix row ", rows, " has ", row_size,
                                        " values but earlier rows have ", cols));
    }
    cols = row_size;
    ++rows;
    row_size = 0;
    return absl::OkStatus();
  };
  while (true) {
    const int c = in.Peek();
    if (c == InputStream::kEof) return EndsEarly(in, "a matrix");
    if (c == ']') {
      in.Get();
      if (absl::Status status = end_row(); !status.ok()) return status;
      if (in.Peek() == '\r') in.Get();
      if (in.Peek() == '\n') in.Get();
      break;
    }
    if (c == '\n' || c == ';') {
      if (absl::Status status = end_row(); !status.ok()) return status;
      in.Get();
      continue;
    }
    if (IsKaldiSpace(c)) {
      in.Get();
      continue;
    }
    ReadNumberToken(in, &token);
    const std::optional<float> value = ParseFloat(token);
    if (!value.has_value()) {
      if (in.Peek() == InputStream::kEof) return EndsEarly(in, "a matrix");
      if (token.empty()) token.push_back(static_cast<char>(in.Get()));
      return LineError(in, absl::StrCat("expected a number in matrix row ", rows, ", got ",
                                        Quote(token)));
    }
    values.push_back(*value);
    ++row_size;
  }
  if (rows == 0) return FloatMatrix();
  FloatMatrix matrix(rows, cols);
  std::copy(values.begin(), values.end(), matrix.data());
  return matrix;
}

void AppendFloat(float value, std::string* out) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                    std::chars_format::general, 7);
  out->append(buffer, result.ptr);
}

void AppendTextVector(const float* values, int64_t count, std::string* out) {
  out->append(" [ ");
  for (int64_t i = 0; i < count; ++i) {
    AppendFloat(values[i], out);
    out->push_back(' ');
  }
  out->append("]\n");
}

void AppendTextMatrix(ConstMatrixView matrix, std::string* out) {
  if (matrix.cols == 0) {
    out->append(" [ ]\n");
    return;
  }
  out->append(" [");
  for (int64_t r = 0; r < matrix.rows; ++r) {
    out->append("\n  ");
    const float* row = matrix.row(r);
    for (int64_t c = 0; c < matrix.cols; ++c) {
      AppendFloat(row[c], out);
      out->push_back(' ');
    }
  }
  out->append("]\n");
}

}  // namespace gmmscore::io_internal
