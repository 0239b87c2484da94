// Kaldi text tables of tokens: the speaker maps of a data directory,
// spk2utt ("spk1 utt1 utt2\n", a token list a key) and utt2spk ("utt1 spk1\n",
// one token a key), as Kaldi's TokenVectorHolder and TokenHolder read them.
//
//   GMM_ASSIGN_OR_RETURN(std::vector<KaldiTokenListEntry> spk2utt, ReadKaldiTokenListTable("ark:data/spk2utt"));
//   GMM_ASSIGN_OR_RETURN(auto utt2spk, ReadKaldiTokenTable("data/utt2spk"));
//
// A line is a key, then its tokens, separated by spaces or tabs (a '\r'
// before the newline is whitespace too); the last line may lack its newline.
// A key with no tokens ("spk1\n") has an empty list. The table is named by
// "ark:FILE" / "ark,t:FILE" (kaldi_specifier.h) or by a plain FILE; "-" is
// standard input.
//
// Errors name the file and the key, and the line where it applies:
// NOT_FOUND for a missing file; INVALID_ARGUMENT for a key given twice
// (Kaldi's random-access readers would silently pick one), a binary ("\0B")
// entry, an utt2spk line without exactly one token, or any other malformed
// line; UNIMPLEMENTED for "scp:" and pipes. Reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_TEXT_TABLE_H_
#define GMMSCORE_KERNELS_IO_KALDI_TEXT_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/io/kaldi_archive.h"

namespace gmmscore {

// Kaldi's TokenVectorHolder (reading only; text only).
struct KaldiTokenVectorHolder {
  using Value = std::vector<std::string>;
  static absl::Status Read(io_internal::KaldiArchiveInput& in, Value* value);
};

using KaldiTokenListEntry = KaldiArchiveEntry<std::vector<std::string>>;

// Every line, in file order (spk2utt).
absl::StatusOr<std::vector<KaldiTokenListEntry>> ReadKaldiTokenListTable(absl::string_view rspecifier);

// Key -> its one token (utt2spk).
absl::StatusOr<std::map<std::string, std::string>> ReadKaldiTokenTable(absl::string_view rspecifier);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_TEXT_TABLE_H_
