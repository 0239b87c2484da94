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

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_SCRIPT_TABLE_H_
