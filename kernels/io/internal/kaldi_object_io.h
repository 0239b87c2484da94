// The pieces a Kaldi object's Read(is, binary) and Write(os, binary) are made
// of (tokens, int32, uint16, float64 scalars, vectors, matrices), in text or
// binary alike, so that one parser and one formatter serve both forms.
// Internal to kernels/io.
//
//   std::unique_ptr<KaldiObjectInput> in = KaldiObjectInput::Open(contents, "Kaldi accumulator 'a.acc'");
//   GMM_RETURN_IF_ERROR(in->ExpectToken("<NUMPDFS>"));
//   GMM_ASSIGN_OR_RETURN(int32_t num_pdfs, in->Int32("the pdf count"));
//
//   KaldiObjectOutput out(/*binary=*/true);
//   out.Token("<NUMPDFS>");
//   out.Int32(num_pdfs);
//   std::string bytes = out.Take();
//
// Input: binary as kaldi_binary.h reads it; text as Kaldi's text readers
// (whitespace-separated tokens and numbers, kaldi_text.h vectors and
// matrices, parsed at float32 except scalars, which are parsed at float64).
// Errors start with the `what` given to Open and give the byte offset
// (binary) or line (text): DATA_LOSS when the input ends early,
// INVALID_ARGUMENT for anything malformed.
//
// Output: byte for byte what Kaldi's WriteToken, WriteBasicType and
// Vector/Matrix::Write write, text at a Kaldi stream's precision 7.
//
// Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_OBJECT_IO_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_OBJECT_IO_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"
#include "kernels/io/internal/kaldi_binary.h"

namespace gmmscore::io_internal {

class KaldiObjectInput {
 public:
  // Binary when `contents` starts with "\0B" (consumed), text otherwise.
  static std::unique_ptr<KaldiObjectInput> Open(std::string contents, std::string what);
  virtual ~KaldiObjectInput() = default;

  virtual bool binary() const = 0;
  // The next token; DATA_LOSS naming `expected` at the end of the input.
  virtual absl::StatusOr<std::string> Token(absl::string_view expected) = 0;
  // Reads a token and checks it is `token` (Unexpected otherwise).
  absl::Status ExpectToken(absl::string_view token);
  // For a token `got` read where `expected` belongs: DATA_LOSS when the input
  // ends right after it (a token cut short), INVALID_ARGUMENT otherwise.
  absl::Status Unexpected(absl::string_view expected, absl::string_view got);
  // True when the next thing (after whitespace, in text) starts with '<'.
  virtual bool NextIsToken() = 0;
  // True when nothing but whitespace (text) or nothing (binary) is left.
  virtual bool AtEnd() = 0;

  virtual absl::StatusOr<int32_t> Int32(absl::string_view what) = 0;
  virtual absl::StatusOr<uint16_t> UInt16(absl::string_view what) = 0;
  virtual absl::StatusOr<double> Double(absl::string_view what) = 0;
  // Float or double vectors and matrices alike.
  virtual absl::StatusOr<std::vector<double>> DoubleVector(absl::string_view what) = 0;
  virtual absl::StatusOr<KaldiDoubleMatrix> DoubleMatrix(absl::string_view what) = 0;

  // INVALID_ARGUMENT: the source, the position, `problem`.
  virtual absl::Status Error(absl::string_view problem) const = 0;
};

class KaldiObjectOutput {
 public:
  // Binary output starts with the "\0B" header, as Kaldi's Output writes it.
  explicit KaldiObjectOutput(bool binary);

  bool binary() const { return binary_; }
  // `token` and one space.
  void Token(absl::string_view token);
  // Binary: WriteBasicType; text: the number and one space.
  void Int32(int32_t value);
  void UInt16(uint16_t value);
  void Double(double value);
  // Binary "FV "/"DV "/"FM "; text " [ a b ]\n" / " [\n  a b \n ]\n".
  void Vector(absl::Span<const float> values);
  void Vector(absl::Span<const double> values);
  void Matrix(ConstMatrixView matrix);

  std::string Take() { return std::move(out_); }

 private:
  const bool binary_;
  std::string out_;
  KaldiBinaryWriter writer_{&out_};
};

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_OBJECT_IO_H_
