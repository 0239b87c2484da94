#include "kernels/hmm/ctm.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gmmscore {
namespace {

std::string Normalised(const std::string& word) {
  std::string out = absl::AsciiStrToLower(word);
  const size_t open = out.rfind('(');
  if (open != std::string::npos && open > 0 && out.back() == ')') out.resize(open);
  return out;
}

}  // namespace

absl::StatusOr<CtmFile> ParseCtm(absl::string_view text, const std::string& name) {
  CtmFile out;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (f.empty() || f[0][0] == ';') continue;
    CtmEntry entry;
    if (f.size() < 5 || !absl::SimpleAtod(f[2], &entry.start) || !absl::SimpleAtod(f[3], &entry.duration) ||
        !std::isfinite(entry.start) || !(entry.duration >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ", line ", line_number, ": expected \"utt channel start duration word\""));
    }
    entry.word = std::string(f[4]);
    out[std::string(f[0])].push_back(std::move(entry));
  }
  return out;
}

double BoundaryComparison::Percentile(double p) const {
  if (differences_ms.empty()) return 0.0;
  std::vector<double> sorted = differences_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t k = std::min(sorted.size() - 1, static_cast<size_t>(p / 100.0 * (sorted.size() - 1) + 0.5));
  return sorted[k];
}

BoundaryComparison CompareWordBoundaries(const CtmFile& reference, const CtmFile& hypothesis) {
  BoundaryComparison out;
  for (const auto& [utt, ref] : reference) {
    const auto it = hypothesis.find(utt);
    if (it == hypothesis.end()) continue;
    const std::vector<CtmEntry>& hyp = it->second;
    bool same = ref.size() == hyp.size();
    for (size_t i = 0; same && i < ref.size(); ++i) same = Normalised(ref[i].word) == Normalised(hyp[i].word);
    if (!same) {
      out.mismatched.push_back(utt);
      continue;
    }
    ++out.utterances;
    for (size_t i = 0; i < ref.size(); ++i) {
      ++out.words;
      out.differences_ms.push_back(1000.0 * std::abs(ref[i].start - hyp[i].start));
      out.differences_ms.push_back(
          1000.0 * std::abs(ref[i].start + ref[i].duration - hyp[i].start - hyp[i].duration));
    }
  }
  return out;
}

}  // namespace gmmscore
