// "htk:PATH" feature tables: HTK parameter files (.mfc, .plp, ...; formats
// in htk_model.h) as a table of utterances, for KaldiMatrixTableReader and
// ReadKaldiMatrixTable (kaldi_script_table.h), which take "htk:" beside
// "ark:" and "scp:".
//
//   GMM_ASSIGN_OR_RETURN(std::vector<HtkTableEntry> files, ReadHtkTable("htk:train.scp"));
//   GMM_ASSIGN_OR_RETURN(FloatMatrix frames, ReadHtkTableEntry(files[0]));
//
// PATH is either one parameter file (one utterance), recognised by its
// header: 12 + nSamples * sampSize bytes (+ 2 with _K) is the file's size in
// one of the two byte orders -- or, when damaged, by a NUL byte in its first
// 12 bytes, which no script has; or else an HTK script, as the tools' -S
// option reads it (a pipe, e.g. htk:<(ls *.mfc), is always a script), one
// file per line (blank lines and the whitespace around a name are ignored):
//   feats/a.mfc              key "a": the base name without its extension
//   utt7=feats/a.mfc         key "utt7": HTK's logical name, as written
//   utt7=feats/a.mfc[20,99]  frames 20..99 of the file, numbered from 0,
//                            both ends included (HTK Book 4.2 "extended
//                            filenames"; HParm.c reads e - s + 1 frames
//                            from frame s)
//   feats/a.mfc[20,99]       key "a", frames 20..99
// Relative file names are relative to the current directory, as in HTK,
// not to the script's directory. Keys must be distinct. A script's lines are
// read when the table is opened, each file only when its entry is read.
// Not supported: quoted names or several names on a line (HTK allows both),
// HTK's undocumented e = -1 for "to the end", standard input and pipes.
//
// Errors name the script and line: NOT_FOUND a missing script or file;
// INVALID_ARGUMENT a duplicate key (naming both lines), a malformed
// extended name, a bad range (s > e, a negative index, e past the file's
// last frame); a damaged file's own errors as htk_model.h gives them
// (DATA_LOSS when truncated). Reentrant.
#ifndef GMMSCORE_KERNELS_IO_HTK_FEATURE_TABLE_H_
#define GMMSCORE_KERNELS_IO_HTK_FEATURE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/core/matrix.h"

namespace gmmscore {

// One utterance of an "htk:" table: where its frames are.
struct HtkTableEntry {
  std::string key;
  std::string path;          // the physical file
  int64_t first_frame = -1;  // an extended name's [s,e]; -1: the whole file
  int64_t last_frame = -1;
  std::string where;  // "HTK script 'F', line N"; empty for a lone file
};

// True for "htk:..." specifiers.
bool IsHtkRspecifier(absl::string_view rspecifier);

// OK when `rspecifier` is an "htk:" specifier this reader takes; opens
// nothing. INVALID_ARGUMENT without a path, UNIMPLEMENTED for "htk:-" and
// pipes.
absl::Status CheckHtkRspecifier(absl::string_view rspecifier);

// One script line, already stripped and not empty. `where` goes into the
// entry and into messages.
absl::StatusOr<HtkTableEntry> ParseHtkScriptLine(absl::string_view line, const std::string& where);

// The table's entries in order: the lone file, or the script's lines. No
// frames are read.
absl::StatusOr<std::vector<HtkTableEntry>> ReadHtkTable(absl::string_view rspecifier);

// The entry's frames (those of its range, if any).
absl::StatusOr<FloatMatrix> ReadHtkTableEntry(const HtkTableEntry& entry);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_HTK_FEATURE_TABLE_H_
