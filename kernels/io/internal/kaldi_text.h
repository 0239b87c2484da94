// Pieces of Kaldi's text serialisation shared by the model and archive
// readers and writers: whitespace-separated tokens, " [ a b c ]" vectors,
// " [\n  a b \n  c d ]" matrices, and floats printed the way a Kaldi output
// stream prints them (InitKaldiOutputStream sets precision 7, so "%.7g").
// Internal to kernels/io.
//
//   std::string token;
//   if (!ReadToken(in, &token)) return Truncated(...);
//   GMM_ASSIGN_OR_RETURN(FloatMatrix m, ReadTextMatrix(in));
//   AppendTextMatrix(m.view(), &out);
//
// Errors carry the line where the problem was seen but not the file name;
// callers add the file and what they were reading. DATA_LOSS means the input
// ended early; INVALID_ARGUMENT means it is malformed.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEXT_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEXT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"
#include "kernels/io/internal/input_stream.h"

namespace gmmscore::io_internal {

// Kaldi's isspace: ' ', '\t', '\n', '\v', '\f', '\r'.
inline bool IsKaldiSpace(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void SkipWhitespace(InputStream& in);

// Skips whitespace, then reads a maximal run of non-space bytes. False at end
// of input (nothing read).
bool ReadToken(InputStream& in, std::string* token);

// A float written by Kaldi or by hand: decimal or scientific, optional sign,
// "inf"/"infinity"/"nan" in any case (as Kaldi accepts). nullopt otherwise.
std::optional<float> ParseFloat(absl::string_view token);
// A decimal int; nullopt if not one or out of range.
std::optional<int> ParseInt(absl::string_view token);

// " [ a b c ]" (whitespace, including newlines, is free-form).
absl::StatusOr<std::vector<float>> ReadTextVector(InputStream& in);

// "[", rows ended by newlines, "]" then one optional newline, as Kaldi's
// Matrix::Read (text) accepts. "[ ]" and "[]" give a 0 x 0 matrix. Every row
// must have the same number of values.
absl::StatusOr<FloatMatrix> ReadTextMatrix(InputStream& in);

// Appends `value` as Kaldi's `os << value` does at precision 7.
void AppendFloat(float value, std::string* out);
// Appends " [ a b c ]\n" (VectorBase::Write, text).
void AppendTextVector(const float* values, int64_t count, std::string* out);
// Appends " [\n  a b \n  c d ]\n", or " [ ]\n" when there are no columns
// (MatrixBase::Write, text).
void AppendTextMatrix(ConstMatrixView matrix, std::string* out);

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEXT_H_
