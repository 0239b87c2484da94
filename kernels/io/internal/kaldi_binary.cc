#include "kernels/io/internal/kaldi_binary.h"

#include <bit>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore::io_internal {
namespace {

static_assert(std::endian::native == std::endian::little, "Kaldi binary files are little-endian");

// Larger than this is a damaged size, rejected before allocating.
constexpr int64_t kMaxElements = int64_t{1} << 34;

}  // namespace

absl::Status KaldiBinaryReader::Error(absl::string_view problem) const {
  return absl::InvalidArgumentError(absl::StrCat(what_, ", byte offset ", pos_, ": ", problem));
}

absl::Status KaldiBinaryReader::Truncated(absl::string_view reading) const {
  return absl::DataLossError(
      absl::StrCat(what_, ": ends at byte ", bytes_.size(), " while reading ", reading, " (truncated?)"));
}

bool KaldiBinaryReader::SkipBinaryHeader() {
  if (bytes_.substr(pos_, 2) == absl::string_view("\0B", 2)) {
    pos_ += 2;
    return true;
  }
  return false;
}

std::string KaldiBinaryReader::PeekToken() const {
  const size_t space = bytes_.find(' ', pos_);
  if (space == absl::string_view::npos) return "";
  return std::string(bytes_.substr(pos_, std::min<size_t>(space - pos_, 64)));
}

absl::StatusOr<std::string> KaldiBinaryReader::ReadToken(absl::string_view expected) {
  const size_t space = bytes_.find(' ', pos_);
  if (space == absl::string_view::npos) return Truncated(expected);
  if (space - pos_ > 256) return Error(absl::StrCat("expected ", expected, ", found no token"));
  std::string token(bytes_.substr(pos_, space - pos_));
  pos_ = static_cast<int64_t>(space) + 1;
  return token;
}

absl::Status KaldiBinaryReader::ExpectToken(absl::string_view token) {
  const int64_t at = pos_;
  GMM_ASSIGN_OR_RETURN(const std::string got, ReadToken(token));
  if (got != token) {
    pos_ = at;
    return Error(absl::StrCat("expected ", token, ", got \"", absl::CEscape(got.substr(0, 40)), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> KaldiBinaryReader::ReadInt32(absl::string_view what) {
  if (pos_ + 5 > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  if (bytes_[pos_] != 4) {
    return Error(absl::StrCat(what, ": expected a 4-byte integer (size byte 4), size byte is ",
                              static_cast<int>(static_cast<signed char>(bytes_[pos_]))));
  }
  int32_t value;
  std::memcpy(&value, bytes_.data() + pos_ + 1, 4);
  pos_ += 5;
  return value;
}

absl::StatusOr<bool> KaldiBinaryReader::ReadBasicBytes(absl::string_view what, int size_byte, void* value) {
  if (pos_ + 1 > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  if (static_cast<signed char>(bytes_[pos_]) != size_byte) return false;
  const int size = size_byte < 0 ? -size_byte : size_byte;
  if (pos_ + 1 + size > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  std::memcpy(value, bytes_.data() + pos_ + 1, size);
  pos_ += 1 + size;
  return true;
}

absl::StatusOr<uint16_t> KaldiBinaryReader::ReadUInt16(absl::string_view what) {
  uint16_t value;
  GMM_ASSIGN_OR_RETURN(const bool read, ReadBasicBytes(what, -2, &value));
  if (!read) {
    return Error(absl::StrCat(what, ": expected an unsigned 2-byte integer (size byte -2), size byte is ",
                              static_cast<int>(static_cast<signed char>(bytes_[pos_]))));
  }
  return value;
}

template <typename Real>
absl::StatusOr<Real> KaldiBinaryReader::ReadReal(absl::string_view what) {
  float f;
  GMM_ASSIGN_OR_RETURN(const bool is_float, ReadBasicBytes(what, 4, &f));
  if (is_float) return static_cast<Real>(f);
  double d;
  GMM_ASSIGN_OR_RETURN(const bool is_double, ReadBasicBytes(what, 8, &d));
  if (is_double) return static_cast<Real>(d);
  return Error(absl::StrCat(what, ": expected a float (size byte 4 or 8), size byte is ",
                            static_cast<int>(static_cast<signed char>(bytes_[pos_]))));
}

absl::StatusOr<float> KaldiBinaryReader::ReadFloat(absl::string_view what) { return ReadReal<float>(what); }

absl::StatusOr<double> KaldiBinaryReader::ReadDouble(absl::string_view what) { return ReadReal<double>(what); }

absl::StatusOr<std::vector<int32_t>> KaldiBinaryReader::ReadInt32Vector(absl::string_view what) {
  if (pos_ + 5 > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  if (bytes_[pos_] != 4) return Error(absl::StrCat(what, ": expected an int32 vector (size byte 4)"));
  int32_t count;
  std::memcpy(&count, bytes_.data() + pos_ + 1, 4);
  if (count < 0) return Error(absl::StrCat(what, ": negative length ", count));
  if (pos_ + 5 + int64_t{count} * 4 > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  std::vector<int32_t> out(count);
  if (count > 0) std::memcpy(out.data(), bytes_.data() + pos_ + 5, int64_t{count} * 4);
  pos_ += 5 + int64_t{count} * 4;
  return out;
}

absl::StatusOr<int64_t> KaldiBinaryReader::ReadSizes(absl::string_view what, int count, int64_t* sizes) {
  const int64_t at = pos_;
  GMM_ASSIGN_OR_RETURN(const std::string type, ReadToken(what));
  int value_bytes = 0;
  const absl::string_view expected = count == 1 ? "FV or DV" : "FM or DM";
  if (type == (count == 1 ? "FV" : "FM")) value_bytes = 4;
  if (type == (count == 1 ? "DV" : "DM")) value_bytes = 8;
  if (value_bytes == 0) {
    pos_ = at;
    return Error(absl::StrCat(what, ": expected ", expected, ", got \"", absl::CEscape(type.substr(0, 20)), "\""));
  }
  int64_t total = 1;
  for (int i = 0; i < count; ++i) {
    GMM_ASSIGN_OR_RETURN(const int32_t size, ReadInt32(what));
    if (size < 0) return Error(absl::StrCat(what, ": negative size ", size));
    sizes[i] = size;
    total *= size;
  }
  if (total > kMaxElements) return Error(absl::StrCat(what, ": implausible size"));
  if (pos_ + total * value_bytes > static_cast<int64_t>(bytes_.size())) return Truncated(what);
  return value_bytes;
}

template <typename Real>
void KaldiBinaryReader::TakeValues(int64_t value_bytes, int64_t count, Real* out) {
  for (int64_t i = 0; i < count; ++i) {
    if (value_bytes == 4) {
      float f;
      std::memcpy(&f, bytes_.data() + pos_ + 4 * i, 4);
      out[i] = static_cast<Real>(f);
    } else {
      double d;
      std::memcpy(&d, bytes_.data() + pos_ + 8 * i, 8);
      out[i] = static_cast<Real>(d);
    }
  }
  pos_ += count * value_bytes;
}

absl::StatusOr<std::vector<float>> KaldiBinaryReader::ReadFloatVector(absl::string_view what) {
  int64_t size;
  GMM_ASSIGN_OR_RETURN(const int64_t value_bytes, ReadSizes(what, 1, &size));
  std::vector<float> out(size);
  TakeValues(value_bytes, size, out.data());
  return out;
}

absl::StatusOr<std::vector<double>> KaldiBinaryReader::ReadDoubleVector(absl::string_view what) {
  int64_t size;
  GMM_ASSIGN_OR_RETURN(const int64_t value_bytes, ReadSizes(what, 1, &size));
  std::vector<double> out(size);
  TakeValues(value_bytes, size, out.data());
  return out;
}

absl::StatusOr<FloatMatrix> KaldiBinaryReader::ReadFloatMatrix(absl::string_view what) {
  int64_t sizes[2];
  GMM_ASSIGN_OR_RETURN(const int64_t value_bytes, ReadSizes(what, 2, sizes));
  FloatMatrix out(sizes[0], sizes[1]);
  TakeValues(value_bytes, sizes[0] * sizes[1], out.data());
  return out;
}

absl::StatusOr<KaldiDoubleMatrix> KaldiBinaryReader::ReadDoubleMatrix(absl::string_view what) {
  int64_t sizes[2];
  GMM_ASSIGN_OR_RETURN(const int64_t value_bytes, ReadSizes(what, 2, sizes));
  KaldiDoubleMatrix out{sizes[0], sizes[1], std::vector<double>(sizes[0] * sizes[1])};
  TakeValues(value_bytes, sizes[0] * sizes[1], out.values.data());
  return out;
}

void KaldiBinaryWriter::Token(absl::string_view token) {
  out_->append(token.data(), token.size());
  out_->push_back(' ');
}

void KaldiBinaryWriter::Vector(absl::Span<const float> values) {
  Token("FV");
  Basic<int32_t>(static_cast<int32_t>(values.size()));
  Raw(values.data(), values.size() * sizeof(float));
}

void KaldiBinaryWriter::Int32Vector(absl::Span<const int32_t> values) {
  out_->push_back(4);
  const int32_t count = static_cast<int32_t>(values.size());
  Raw(&count, sizeof(count));
  Raw(values.data(), values.size() * sizeof(int32_t));
}

void KaldiBinaryWriter::Vector(absl::Span<const double> values) {
  Token("DV");
  Basic<int32_t>(static_cast<int32_t>(values.size()));
  Raw(values.data(), values.size() * sizeof(double));
}

void KaldiBinaryWriter::Matrix(ConstMatrixView matrix) {
  Token("FM");
  Basic<int32_t>(static_cast<int32_t>(matrix.rows));
  Basic<int32_t>(static_cast<int32_t>(matrix.cols));
  for (int64_t r = 0; r < matrix.rows; ++r) Raw(matrix.row(r), matrix.cols * sizeof(float));
}

}  // namespace gmmscore::io_internal
