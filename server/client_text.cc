#include "server/client_text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gmmscore {

std::string ClientText(absl::string_view text) {
  std::string shown;
  size_t used = 0;
  for (; used < text.size(); ++used) {
    // Escape one byte at a time so that a cut never splits an escape.
    const std::string escaped = absl::CHexEscape(text.substr(used, 1));
    if (shown.size() + escaped.size() > kClientTextMaxChars) break;
    shown += escaped;
  }
  if (used < text.size()) absl::StrAppend(&shown, "...(", text.size(), " bytes)");
  return shown;
}

}  // namespace gmmscore
