#include "kernels/io/transcripts.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

bool IsSentenceMarker(absl::string_view word) { return word == "<s>" || word == "</s>" || word == "<sil>"; }

}  // namespace

absl::StatusOr<std::vector<Transcript>> ParseTranscripts(absl::string_view text, const std::string& name) {
  std::vector<Transcript> out;
  std::set<std::string> seen;
  int line_number = 0;
  int sphinx_lines = 0, kaldi_lines = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    std::vector<absl::string_view> tokens = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (tokens.empty()) continue;
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(name, ", line ", line_number, ": ", what));
    };
    Transcript transcript;
    const absl::string_view last = tokens.back();
    const bool sphinx = last.size() > 2 && last.front() == '(' && last.back() == ')';
    (sphinx ? sphinx_lines : kaldi_lines)++;
    if (sphinx_lines > 0 && kaldi_lines > 0) {
      return error("mixes Sphinx lines (\"words (uttid)\") and Kaldi lines (\"uttid words\")");
    }
    if (sphinx) {
      transcript.utterance = std::string(last.substr(1, last.size() - 2));
      tokens.pop_back();
    } else {
      if (IsSentenceMarker(tokens[0])) return error("a Kaldi line must start with the utterance id");
      transcript.utterance = std::string(tokens[0]);
      tokens.erase(tokens.begin());
    }
    for (absl::string_view word : tokens) {
      if (!IsSentenceMarker(word)) transcript.words.emplace_back(word);
    }
    if (!seen.insert(transcript.utterance).second) {
      return error(absl::StrCat("utterance \"", transcript.utterance.substr(0, 80), "\" appears twice"));
    }
    out.push_back(std::move(transcript));
  }
  return out;
}

absl::StatusOr<std::vector<Transcript>> ReadTranscripts(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParseTranscripts(text, path);
}

}  // namespace gmmscore
