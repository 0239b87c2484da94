// Kaldi int32-vector archives: alignments (ali.ark, what gmm-align and
// ali-to-pdf write and gmm-acc-stats-ali reads), one std::vector<int32_t> an
// utterance, read one entry at a time and written byte for byte as Kaldi's
// TableWriter<BasicVectorHolder<int32>> writes them. Machinery and errors:
// kaldi_archive.h.
//
//   GMM_ASSIGN_OR_RETURN(auto reader, KaldiIntVectorArchiveReader::Open("ark:ali.ark"));
//   GMM_ASSIGN_OR_RETURN(std::vector<KaldiIntVectorEntry> all, ReadKaldiIntVectorArchive("ark,t:ali.txt"));
//   GMM_RETURN_IF_ERROR(WriteKaldiIntVectorArchive("ark:out.ark", all));
//
// Entry formats:
//   text:   KEY " 1 2 3 \n": each value and a space, then a newline ("KEY \n"
//           when empty). Reading takes the rest of the line, values separated
//           by any whitespace, an optional sign on each.
//   binary: KEY " \0B", the size as an int32 basic type (the byte 4 and four
//           little-endian bytes), then each value the same way.
// A value that is not an int32 is INVALID_ARGUMENT.
#ifndef GMMSCORE_KERNELS_IO_KALDI_INT_VECTOR_ARCHIVE_H_
#define GMMSCORE_KERNELS_IO_KALDI_INT_VECTOR_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/io/kaldi_archive.h"

namespace gmmscore {

// Kaldi's BasicVectorHolder<int32>.
struct KaldiInt32VectorHolder {
  using Value = std::vector<int32_t>;
  static absl::Status Read(io_internal::KaldiArchiveInput& in, Value* value);
  static void Append(const Value& value, bool text, std::string* out);
};

using KaldiIntVectorArchiveReader = KaldiArchiveReader<KaldiInt32VectorHolder>;
using KaldiIntVectorEntry = KaldiArchiveEntry<std::vector<int32_t>>;

// ReadKaldiArchive, AppendKaldiArchiveEntry and WriteKaldiArchive
// (kaldi_archive.h) for this holder.
inline absl::StatusOr<std::vector<KaldiIntVectorEntry>> ReadKaldiIntVectorArchive(absl::string_view rspecifier) {
  return ReadKaldiArchive<KaldiInt32VectorHolder>(rspecifier);
}
inline absl::Status AppendKaldiIntVectorEntry(absl::string_view key, const std::vector<int32_t>& values, bool text,
                                              std::string* out) {
  return AppendKaldiArchiveEntry<KaldiInt32VectorHolder>(key, values, text, out);
}
inline absl::Status WriteKaldiIntVectorArchive(absl::string_view wspecifier,
                                               absl::Span<const KaldiIntVectorEntry> entries) {
  return WriteKaldiArchive<KaldiInt32VectorHolder>(wspecifier, entries);
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_INT_VECTOR_ARCHIVE_H_
