// Kaldi's table specifiers, the archive subset: "ark:FILE", "ark,t:FILE",
// "ark:-" (standard input or output).
//
//   GMM_ASSIGN_OR_RETURN(ArchiveSpecifier in, ParseArchiveRspecifier("ark:feats.ark"));
//   GMM_ASSIGN_OR_RETURN(ArchiveSpecifier out, ParseArchiveWspecifier("ark,t:-"));
//
// Options before the ':' are comma-separated and in any order, as Kaldi
// allows. Reading: "t"/"b" are accepted and ignored (each entry says whether
// it is binary); "o", "s", "cs", "no", "ns", "nw", "bg" only matter to
// random access or threading and are ignored. Writing: "t" text, "b" binary
// (the default, as in Kaldi), "f"/"nf" (flushing) ignored.
//
// Errors: INVALID_ARGUMENT for a malformed specifier or an unknown option;
// UNIMPLEMENTED for reading "scp:" tables here (KaldiMatrixTableReader in
// kaldi_script_table.h reads them), "p" (permissive), and pipes ("cmd |",
// "| cmd"): use "ark:-" with a shell pipe instead. Writing takes
// "ark,scp:ARCHIVE,SCRIPT". Reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_SPECIFIER_H_
#define GMMSCORE_KERNELS_IO_KALDI_SPECIFIER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct ArchiveSpecifier {
  std::string path;    // a file name, or "-" for standard input/output
  bool text = false;   // writing only: text (",t") rather than binary
  // Writing only, "ark,scp:ARCHIVE,SCRIPT": also write a script file with
  // each key's "ARCHIVE:OFFSET", as Kaldi does; empty otherwise.
  std::string script_path;
};

absl::StatusOr<ArchiveSpecifier> ParseArchiveRspecifier(absl::string_view rspecifier);
absl::StatusOr<ArchiveSpecifier> ParseArchiveWspecifier(absl::string_view wspecifier);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_SPECIFIER_H_
