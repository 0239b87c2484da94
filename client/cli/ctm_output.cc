#include "client/cli/ctm_output.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/command.h"

namespace gmmscore::cli {

absl::StatusOr<std::string> CtmPath(const std::string& output) {
  if (!absl::StartsWith(output, "ctm:") || output.size() == 4) {
    return UsageError(absl::StrCat("--output must be ctm:FILE (or ctm:- for stdout), not '", output, "'"));
  }
  return output.substr(4);
}

absl::Status WriteCtm(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return absl::OkStatus();
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace gmmscore::cli
