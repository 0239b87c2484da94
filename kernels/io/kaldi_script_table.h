// Kaldi script files ("scp:feats.scp") of float matrices: each line is
// "KEY RXFILENAME", where RXFILENAME is "FILE:OFFSET" (the byte offset of an
// object inside an archive, as copy-feats ... ark,scp: writes) or a plain
// FILE holding one object. At the offset sits the matrix exactly as in an
// archive after "KEY ": "\0B" + "FM "/"DM " binary, or text "[ ... ]".
//
//   GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> feats, ReadKaldiScriptTable("scp:feats.scp"));
//
// Not supported (UNIMPLEMENTED): pipes ("cmd |"), ranges ("file:12[0:9]"),
// compressed matrices. Errors name the scp file and line, or the archive and
// offset: NOT_FOUND for a missing scp or archive, DATA_LOSS when an object is
// cut short, INVALID_ARGUMENT for malformed lines or data (an offset beyond
// the end of the archive included). Reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_
#define GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/io/kaldi_matrix_archive.h"

namespace gmmscore {

// True for "scp:..." / "scp,...:..." specifiers.
bool IsScriptRspecifier(absl::string_view rspecifier);

// Every entry of the table, in file order.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiScriptTable(absl::string_view rspecifier);

// One matrix object at `offset` in `path` ("\0B" binary or text).
absl::StatusOr<FloatMatrix> ReadKaldiMatrixObject(const std::string& path, int64_t offset);

// Reads "ark:..." or "scp:..." tables alike.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiMatrixTable(absl::string_view rspecifier);

// OK when `rspecifier` is an "ark:" or "scp:" table specifier this reader
// takes (nothing is opened): a command's usage check before its work.
absl::Status CheckTableRspecifier(absl::string_view rspecifier);

// One line of a script: where KEY's matrix is.
struct KaldiScriptLine {
  std::string key;
  std::string path;
  int64_t offset = 0;
  std::string where;  // "scp 'F', line N", for messages
};
// The lines of an "scp:" table (no matrix read yet).
absl::StatusOr<std::vector<KaldiScriptLine>> ReadKaldiScript(absl::string_view rspecifier);
absl::StatusOr<FloatMatrix> ReadKaldiScriptLine(const KaldiScriptLine& line);

// Reads "ark:..." and "scp:..." tables one entry at a time, as
// KaldiMatrixArchiveReader reads archives: a script's lines are read at
// Open, each matrix only when Next reaches it, so a table of thousands of
// hours is never in memory at once.
//
//   GMM_ASSIGN_OR_RETURN(auto table, KaldiMatrixTableReader::Open("scp:feats.scp"));
//   while (true) { GMM_ASSIGN_OR_RETURN(bool more, table->Next()); if (!more) break; use(table->key(), table->matrix()); }
class KaldiMatrixTableReader {
 public:
  static absl::StatusOr<std::unique_ptr<KaldiMatrixTableReader>> Open(absl::string_view rspecifier);

  // As KaldiMatrixArchiveReader::Next: true with an entry, false at the end.
  absl::StatusOr<bool> Next();
  const std::string& key() const { return key_; }
  const FloatMatrix& matrix() const { return matrix_; }
  FloatMatrix& mutable_matrix() { return matrix_; }

 private:
  KaldiMatrixTableReader() = default;

  std::unique_ptr<KaldiMatrixArchiveReader> archive_;  // an archive, or
  std::vector<KaldiScriptLine> script_;                // a script's lines
  size_t next_line_ = 0;
  std::string key_;
  FloatMatrix matrix_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_
