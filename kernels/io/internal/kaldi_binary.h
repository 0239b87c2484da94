// Reading Kaldi's binary serialisation (io-funcs.h): tokens followed by one
// space, basic types as a size byte then little-endian bytes, integer vectors
// as a size byte, an int32 count and raw elements, "FV "/"DV " vectors and
// "FM "/"DM " matrices. Internal to kernels/io.
//
//   KaldiBinaryReader in(contents, "Kaldi model 'final.mdl'");
//   GMM_RETURN_IF_ERROR(in.ExpectToken("<DIMENSION>"));
//   GMM_ASSIGN_OR_RETURN(int32_t dim, in.ReadInt32("the dimension"));
//
// Errors name the source and the byte offset: DATA_LOSS at the end of the
// data, INVALID_ARGUMENT for anything malformed. Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"

namespace gmmscore::io_internal {

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
  // A float written as float (size 4) or double (size 8).
  absl::StatusOr<float> ReadFloat(absl::string_view what);
  absl::StatusOr<std::vector<int32_t>> ReadInt32Vector(absl::string_view what);
  absl::StatusOr<std::vector<float>> ReadFloatVector(absl::string_view what);
  absl::StatusOr<FloatMatrix> ReadFloatMatrix(absl::string_view what);

 private:
  absl::StatusOr<int64_t> ReadSizes(absl::string_view what, int count, int64_t* sizes);

  absl::string_view bytes_;
  std::string what_;
  int64_t pos_ = 0;
};

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_BINARY_H_
