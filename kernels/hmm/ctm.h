// CTM files ("utt channel start duration word [confidence]") read back, and
// word boundaries of two alignments of the same transcripts compared: how
// an aligner is checked against another (pocketsphinx's FSG alignment).
//
//   GMM_ASSIGN_OR_RETURN(CtmFile ref, ParseCtm(text, "ref.ctm"));
//   BoundaryComparison c = CompareWordBoundaries(ref, hyp);   // c.differences_ms, c.median_ms()
#ifndef GMMSCORE_KERNELS_HMM_CTM_H_
#define GMMSCORE_KERNELS_HMM_CTM_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct CtmEntry {
  double start = 0, duration = 0;
  std::string word;
};
using CtmFile = std::map<std::string, std::vector<CtmEntry>>;  // by utterance, in file order

// INVALID_ARGUMENT naming the line for fewer than five fields or bad times.
absl::StatusOr<CtmFile> ParseCtm(absl::string_view text, const std::string& name);

struct BoundaryComparison {
  std::vector<double> differences_ms;  // |start - start| and |end - end| per word
  int utterances = 0, words = 0;
  std::vector<std::string> mismatched;  // utterances whose word sequences differ (not compared)
  double Percentile(double p) const;    // of differences_ms; 0 when empty
};

// Utterances in both files whose word sequences agree, word by word
// (case-insensitive, a "(2)" pronunciation suffix ignored).
BoundaryComparison CompareWordBoundaries(const CtmFile& reference, const CtmFile& hypothesis);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_CTM_H_
