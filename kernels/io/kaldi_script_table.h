// Feature tables: Kaldi archives ("ark:feats.ark", kaldi_matrix_archive.h),
// Kaldi script files ("scp:feats.scp") and HTK parameter files
// ("htk:a.mfc" or "htk:list.scp", htk_feature_table.h), all read here.
//
// Kaldi script files of float matrices: each line is
// "KEY RXFILENAME", where RXFILENAME is "FILE:OFFSET" (the byte offset of an
// object inside an archive, as copy-feats ... ark,scp: writes) or a plain
// FILE holding one object. At the offset sits the matrix exactly as in an
// archive after "KEY ": "\0B" + "FM "/"DM " binary, or text "[ ... ]".
//
//   GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> feats, ReadKaldiScriptTable("scp:feats.scp"));
//   GMM_ASSIGN_OR_RETURN(std::vector<KaldiMatrixEntry> mfc, ReadKaldiMatrixTable("htk:train.scp"));
//
// "htk:PATH": PATH is one HTK parameter file (key: its base name without
// extension) or an HTK script of such files, one per line, with HTK's
// extended names "KEY=FILE[START,END]" (frames START..END, both included);
// compressed (_C), _K and little-endian files are read. Relative names in a
// script are relative to the current directory, as in HTK.
//
// Not supported (UNIMPLEMENTED): pipes ("cmd |"), ranges ("file:12[0:9]"),
// compressed Kaldi matrices, "htk:-". Errors name the scp file and line, or
// the archive and offset, or the HTK script and line: NOT_FOUND for a
// missing scp, archive, HTK script or file, DATA_LOSS when an object or HTK
// file is cut short, INVALID_ARGUMENT for malformed lines or data (an offset
// beyond the end of the archive, a duplicate key in an HTK script, an HTK
// range past the end of its file included). Reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_
#define GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/io/htk_feature_table.h"
#include "kernels/io/kaldi_matrix_archive.h"

namespace gmmscore {

// True for "scp:..." / "scp,...:..." specifiers.
bool IsScriptRspecifier(absl::string_view rspecifier);

// Every entry of the table, in file order.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiScriptTable(absl::string_view rspecifier);

// One matrix object at `offset` in `path` ("\0B" binary or text).
absl::StatusOr<FloatMatrix> ReadKaldiMatrixObject(const std::string& path, int64_t offset);

// Reads "ark:...", "scp:..." or "htk:..." tables alike.
absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiMatrixTable(absl::string_view rspecifier);

// OK when `rspecifier` is an "ark:", "scp:" or "htk:" table specifier this
// reader takes (nothing is opened): a command's usage check before its work.
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

// Reads "ark:...", "scp:..." and "htk:..." tables one entry at a time, as
// KaldiMatrixArchiveReader reads archives: a script's lines (Kaldi's or
// HTK's) are read at Open, each matrix only when Next reaches it, so a table
// of thousands of hours is never in memory at once.
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
  std::vector<KaldiScriptLine> script_;                // a script's lines, or
  bool htk_ = false;                                   // an htk: table's
  std::vector<HtkTableEntry> htk_entries_;             //   files
  size_t next_line_ = 0;
  std::string key_;
  FloatMatrix matrix_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_
