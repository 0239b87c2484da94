// Kaldi's binary serialisation (io-funcs.h), read and written: tokens
// followed by one space, basic types as a size byte then little-endian bytes
// (the size byte is negated for unsigned integers: a uint16 is 0xFE and two
// bytes), integer vectors as a size byte, an int32 count and raw elements,
// "FV "/"DV " vectors and "FM "/"DM " matrices (an int32 size each, then the
// float32/float64 values). Internal to kernels/io.
//
//   KaldiBinaryReader in(contents, "Kaldi model 'final.mdl'");
//   GMM_RETURN_IF_ERROR(in.ExpectToken("<DIMENSION>"));
//   GMM_ASSIGN_OR_RETURN(int32_t dim, in.ReadInt32("the dimension"));
//
//   std::string out;
//   KaldiBinaryWriter writer(&out);
//   writer.Header();
//   writer.Token("<DIMENSION>");
//   writer.Basic<int32_t>(dim);
//
// Reader errors name the source and the byte offset: DATA_LOSS at the end of
// the data, INVALID_ARGUMENT for anything malformed. Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore::io_internal {

// A row-major float64 matrix as read from "FM "/"DM ".
struct KaldiDoubleMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> values;  // rows * cols
};

class KaldiBinaryReader {
 public:
  // `bytes` must outlive the reader; `what` prefixes messages.
  KaldiBinaryReader(absl::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  int64_t offset() const { return pos_; }
  const std::string& what() const { return what_; }
  bool at_end() const { return pos_ >= static_cast<int64_t>(bytes_.size()); }
  absl::Status Error(absl::string_view problem) const;
  absl::Status Truncated(absl::string_view reading) const;

  // Skips "\0B" if it is there; true when it was.
  bool SkipBinaryHeader();
  // The next token (up to a space, which is consumed).
  absl::StatusOr<std::string> ReadToken(absl::string_view expected);
  absl::Status ExpectToken(absl::string_view token);
  // The next token without consuming it ("" at the end).
  std::string PeekToken() const;

  absl::StatusOr<int32_t> ReadInt32(absl::string_view what);
  // An unsigned 16-bit integer (size byte -2), e.g. Kaldi's GmmFlagsType.
  absl::StatusOr<uint16_t> ReadUInt16(absl::string_view what);
  // A float or double written as float (size 4) or double (size 8).
  absl::StatusOr<float> ReadFloat(absl::string_view what);
  absl::StatusOr<double> ReadDouble(absl::string_view what);
  absl::StatusOr<std::vector<int32_t>> ReadInt32Vector(absl::string_view what);
  // Vectors and matrices stored as "FV "/"DV " or "FM "/"DM " alike.
  absl::StatusOr<std::vector<float>> ReadFloatVector(absl::string_view what);
  absl::StatusOr<std::vector<double>> ReadDoubleVector(absl::string_view what);
  absl::StatusOr<FloatMatrix> ReadFloatMatrix(absl::string_view what);
  absl::StatusOr<KaldiDoubleMatrix> ReadDoubleMatrix(absl::string_view what);

 private:
  absl::StatusOr<int64_t> ReadSizes(absl::string_view what, int count, int64_t* sizes);
  // A basic type whose size byte is `size_byte`; false (nothing consumed)
  // when the size byte differs. DATA_LOSS when the bytes run out.
  absl::StatusOr<bool> ReadBasicBytes(absl::string_view what, int size_byte, void* value);
  template <typename Real>
  absl::StatusOr<Real> ReadReal(absl::string_view what);
  // Converts `count` stored values of `value_bytes` each at the read position
  // into `out` and moves past them.
  template <typename Real>
  void TakeValues(int64_t value_bytes, int64_t count, Real* out);

  absl::string_view bytes_;
  std::string what_;
  int64_t pos_ = 0;
};

// Appends Kaldi's binary serialisation to a string it does not own, byte
// for byte as Kaldi's WriteToken, WriteBasicType, Vector::Write and
// Matrix::Write (binary) write it.
class KaldiBinaryWriter {
 public:
  explicit KaldiBinaryWriter(std::string* out) : out_(out) {}

  // The binary header "\0B" that Kaldi's Output puts in front of an object.
  void Header() { out_->append("\0B", 2); }
  // `token` and one space.
  void Token(absl::string_view token);
  // WriteBasicType: the size byte (negated for unsigned integers), then the
  // value's little-endian bytes.
  template <typename T>
  void Basic(T value) {
    static_assert(std::is_arithmetic_v<T>);
    constexpr int kSize = static_cast<int>(sizeof(T));
    out_->push_back(static_cast<char>(std::is_signed_v<T> ? kSize : -kSize));
    Raw(&value, sizeof(T));
  }
  // WriteIntegerVector: the size byte 4, the raw int32 count, the values.
  void Int32Vector(absl::Span<const int32_t> values);
  // "FV "/"DV ", the int32 size, the values.
  void Vector(absl::Span<const float> values);
  void Vector(absl::Span<const double> values);
  // "FM ", int32 rows, int32 cols, the values row by row.
  void Matrix(ConstMatrixView matrix);

 private:
  void Raw(const void* bytes, size_t count) { out_->append(static_cast<const char*>(bytes), count); }

  std::string* out_;
};

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_
