#include "kernels/io/kaldi_specifier.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gmmscore {
namespace {

absl::StatusOr<ArchiveSpecifier> Parse(absl::string_view spec, bool writing) {
  const absl::string_view kind = writing ? "wspecifier" : "rspecifier";
  const size_t colon = spec.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", spec, "' is not a Kaldi ", kind, ": expected ark:FILE", writing ? " or ark,t:FILE" : ""));
  }
  ArchiveSpecifier result;
  bool archive = false, script = false;
  for (absl::string_view option : absl::StrSplit(spec.substr(0, colon), ',')) {
    option = absl::StripAsciiWhitespace(option);
    if (option == "ark") {
      archive = true;
    } else if (option == "scp") {
      if (!writing) {
        // Readers take scp: through KaldiMatrixTableReader (kaldi_script_table.h).
        return absl::UnimplementedError(absl::StrCat(
            "'", spec, "': an scp table where only an archive can be read; use ark:FILE"));
      }
      script = true;
    } else if (option == "p") {
      return absl::UnimplementedError(
          absl::StrCat("'", spec, "': the permissive option \"p\" is not supported"));
    } else if (option == "t") {
      result.text = writing;
    } else if (option == "b") {
      result.text = false;
    } else if (writing ? (option == "f" || option == "nf")
                       : (option == "o" || option == "s" || option == "cs" || option == "no" ||
                          option == "ns" || option == "nw" || option == "bg")) {
      // No effect on sequential archive access.
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("'", spec, "': unknown ", kind, " option \"", option, "\""));
    }
  }
  if (!archive) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", spec, "' is not a Kaldi archive ", kind, ": expected ark:FILE", writing ? " or ark,t:FILE" : ""));
  }
  result.path = std::string(absl::StripAsciiWhitespace(spec.substr(colon + 1)));
  if (script) {
    // "ark,scp:ARCHIVE,SCRIPT", as Kaldi writes both at once.
    const size_t comma = result.path.rfind(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == result.path.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", spec, "': ark,scp: needs two file names, ARCHIVE,SCRIPT"));
    }
    result.script_path = result.path.substr(comma + 1);
    result.path.resize(comma);
    if (result.path == "-" || result.script_path == "-") {
      return absl::InvalidArgumentError(absl::StrCat("'", spec, "': ark,scp: writes files, not standard output"));
    }
  }
  if (result.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", spec, "': no file name after the ':'"));
  }
  if (result.path.front() == '|' || result.path.back() == '|') {
    return absl::UnimplementedError(absl::StrCat(
        "'", spec, "': pipes are not supported; use ark:- with a shell pipe instead"));
  }
  return result;
}

}  // namespace

absl::StatusOr<ArchiveSpecifier> ParseArchiveRspecifier(absl::string_view rspecifier) {
  return Parse(rspecifier, /*writing=*/false);
}

absl::StatusOr<ArchiveSpecifier> ParseArchiveWspecifier(absl::string_view wspecifier) {
  return Parse(wspecifier, /*writing=*/true);
}

}  // namespace gmmscore
