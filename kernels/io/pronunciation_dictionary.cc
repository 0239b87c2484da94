#include "kernels/io/pronunciation_dictionary.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

// "word(2)" -> "word"; a word without a suffix is itself.
absl::StatusOr<absl::string_view> BaseWord(absl::string_view token) {
  if (!absl::EndsWith(token, ")")) return token;
  const size_t open = token.rfind('(');
  int n = 0;
  if (open == absl::string_view::npos || open == 0 ||
      !absl::SimpleAtoi(token.substr(open + 1, token.size() - open - 2), &n) || n < 1) {
    return absl::InvalidArgumentError(absl::StrCat("bad alternative suffix in \"", token.substr(0, 80), "\""));
  }
  return token.substr(0, open);
}

}  // namespace

const std::vector<Pronunciation>* PronunciationDictionary::Find(absl::string_view word) const {
  auto it = words_.find(std::string(word));
  if (it == words_.end()) it = words_.find(absl::AsciiStrToLower(word));
  return it == words_.end() ? nullptr : &it->second;
}

absl::StatusOr<PronunciationDictionary> ParsePronunciationDictionary(absl::string_view text, const std::string& name) {
  PronunciationDictionary dict;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StartsWith(line, ";;;") || absl::StartsWith(line, "#")) continue;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> tokens = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (tokens.empty()) continue;
    const absl::StatusOr<absl::string_view> word = BaseWord(tokens[0]);
    if (!word.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ", line ", line_number, ": ", word.status().message()));
    if (tokens.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ", line ", line_number, ": \"", tokens[0].substr(0, 80), "\" has no phones"));
    }
    dict.Add(std::string(*word), Pronunciation(tokens.begin() + 1, tokens.end()));
  }
  return dict;
}

absl::StatusOr<PronunciationDictionary> ReadPronunciationDictionary(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParsePronunciationDictionary(text, path);
}

}  // namespace gmmscore
