// Kaldi float-matrix archives (what copy-feats reads and gmm-compute-likes
// writes), read one entry at a time and written byte for byte as Kaldi's
// TableWriter<KaldiObjectHolder<Matrix<BaseFloat>>> writes them.
//
//   GMM_ASSIGN_OR_RETURN(auto reader, KaldiMatrixArchiveReader::Open("ark:feats.ark"));
//   GMM_ASSIGN_OR_RETURN(auto writer, KaldiMatrixArchiveWriter::Open("ark,t:out.txt"));
//   while (true) {
//     GMM_ASSIGN_OR_RETURN(bool more, reader->Next());
//     if (!more) break;
//     GMM_RETURN_IF_ERROR(writer->Write(reader->key(), reader->matrix().view()));
//   }
//   GMM_RETURN_IF_ERROR(writer->Close());
//
// Entry formats (an archive may mix them):
//   binary: KEY ' ' "\0B" "FM " 0x04 int32 rows 0x04 int32 cols, rows x cols
//           float32, all little-endian; "DM " entries hold float64 and are
//           converted to float. Compressed "CM"/"CM2"/"CM3" entries are
//           UNIMPLEMENTED (decompress with `copy-feats` first).
//   text:   KEY "  [\n  1 2 3 \n  4 5 6 ]\n"; floats printed as "%.7g"
//           (Kaldi's output precision), "[ ]" for an empty matrix.
// Specifiers: kaldi_specifier.h ("ark:FILE", "ark,t:FILE", "ark:-").
//
// Errors name the file, the entry's key and the byte offset (binary) or line
// (text): NOT_FOUND for a missing file, DATA_LOSS when the input ends inside
// an entry, INVALID_ARGUMENT for malformed content, UNIMPLEMENTED as above.
// Values are returned as written, NaN and infinity included: validating them
// is the caller's job (ValidateFeatures in scoring_backend.h).
//
// Thread safety: a reader or writer is used by one thread at a time.
#ifndef GMMSCORE_KERNELS_IO_KALDI_MATRIX_ARCHIVE_H_
#define GMMSCORE_KERNELS_IO_KALDI_MATRIX_ARCHIVE_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

namespace io_internal {
class InputStream;
}  // namespace io_internal

struct KaldiMatrixEntry {
  std::string key;
  FloatMatrix matrix;
};

// Streams the entries of one archive, in file order.
class KaldiMatrixArchiveReader {
 public:
  // Parses the rspecifier and opens the file (nothing is read yet).
  static absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveReader>> Open(absl::string_view rspecifier);
  // Reads an archive held in memory; `name` stands for the file in messages.
  static std::unique_ptr<KaldiMatrixArchiveReader> FromString(std::string data, std::string name);

  KaldiMatrixArchiveReader(const KaldiMatrixArchiveReader&) = delete;
  KaldiMatrixArchiveReader& operator=(const KaldiMatrixArchiveReader&) = delete;
  ~KaldiMatrixArchiveReader();

  // Reads the next entry: true when key() and matrix() hold it, false at the
  // clean end of the archive, an error (see above) otherwise. After an error
  // every later call returns the same error.
  absl::StatusOr<bool> Next();

  // The current entry; valid after Next() returned true, until the next call.
  const std::string& key() const { return key_; }
  const FloatMatrix& matrix() const { return matrix_; }
  // Lets the caller move the matrix out.
  FloatMatrix& mutable_matrix() { return matrix_; }
  // Byte offset at which the current entry's key starts.
  int64_t entry_offset() const { return entry_offset_; }
  // The file name, or "standard input".
  const std::string& source_name() const;

 private:
  explicit KaldiMatrixArchiveReader(std::unique_ptr<io_internal::InputStream> in);
  absl::Status ReadEntry();
  absl::Status ReadBinaryMatrix();
  absl::Status ReadTextMatrix();
  absl::Status Error(absl::StatusCode code, absl::string_view what) const;

  std::unique_ptr<io_internal::InputStream> in_;
  std::string key_;
  FloatMatrix matrix_;
  int64_t entry_offset_ = 0;
  absl::Status error_;
};

// Reads a whole archive into memory.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiMatrixArchive(absl::string_view rspecifier);

// Appends one archive entry, binary or text, exactly as Kaldi writes it.
// INVALID_ARGUMENT when `key` is not a Kaldi token (empty, or containing
// whitespace or ASCII control characters) or a size does not fit in int32.
absl::Status AppendKaldiMatrixEntry(absl::string_view key, ConstMatrixView matrix, bool text,
                                    std::string* out);

// Writes entries to one archive (binary unless the wspecifier has ",t").
class KaldiMatrixArchiveWriter {
 public:
  // Parses the wspecifier and creates (truncates) the file; "-" is standard
  // output; "ark,scp:ARCHIVE,SCRIPT" also writes the script file (each
  // key's ARCHIVE:OFFSET, as Kaldi's copy-feats does). Errno-derived codes
  // when a file cannot be created.
  static absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveWriter>> Open(absl::string_view wspecifier);

  KaldiMatrixArchiveWriter(const KaldiMatrixArchiveWriter&) = delete;
  KaldiMatrixArchiveWriter& operator=(const KaldiMatrixArchiveWriter&) = delete;
  // Closes the file if Close() was not called, ignoring errors.
  ~KaldiMatrixArchiveWriter();

  // Appends one entry. INVALID_ARGUMENT for a bad key; errno-derived codes
  // (e.g. RESOURCE_EXHAUSTED for a full disk) when writing fails.
  absl::Status Write(absl::string_view key, ConstMatrixView matrix);
  // Flushes and closes; reports any write error not reported yet.
  absl::Status Close();

  bool text() const { return text_; }

 private:
  KaldiMatrixArchiveWriter(std::FILE* file, bool owns_file, bool text, std::string name);

  std::FILE* file_;
  const bool owns_file_;
  const bool text_;
  const std::string name_;
  std::string buffer_;
  int64_t written_ = 0;           // bytes of the archive so far
  std::FILE* script_ = nullptr;   // "ark,scp:": the script file
  std::string script_name_;
};

// Writes all `entries` to the archive named by `wspecifier`.
absl::Status WriteKaldiMatrixArchive(absl::string_view wspecifier,
                                     absl::Span<const KaldiMatrixEntry> entries);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_MATRIX_ARCHIVE_H_
