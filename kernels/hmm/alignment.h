// A forced alignment read off a Viterbi path through an utterance graph:
// word, filler and phone segments with their frames, the senone of each
// frame; and the CTM lines aligners write.
//
//   Alignment a = AlignmentFromPath(lexicon, graph, path);
//   std::string ctm = WordCtm("utt1", a, 0.01);   // "utt1 1 0.32 0.41 mister\n..."
//
// Segments are maximal runs of frames in one phone (phones) or in one word
// or filler occurrence (words). A word's segment covers all of its phones;
// silence and noise are segments of their own (word == -1), so a word's
// start excludes the silence before it, as pocketsphinx's segments do.
// CTM: "utt channel start duration label" with channel 1 and times in
// seconds (two decimals: frames are 10 ms). Word CTMs leave fillers out;
// phone CTMs keep every phone (SIL included), named by base phone.
#ifndef GMMSCORE_KERNELS_HMM_ALIGNMENT_H_
#define GMMSCORE_KERNELS_HMM_ALIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/hmm/hmm_reference.h"
#include "kernels/hmm/sphinx_lexicon.h"
#include "kernels/hmm/utterance_graph.h"

namespace gmmscore {

struct AlignedSegment {
  std::string label;   // the word, filler word ("<sil>") or base phone
  int32_t word = -1;   // index into the transcript; -1 for fillers
  int64_t first_frame = 0;
  int64_t num_frames = 0;
};

struct Alignment {
  double log_likelihood = 0.0;          // of the best path
  std::vector<AlignedSegment> words;    // words and fillers, in time order
  std::vector<AlignedSegment> phones;   // in time order
  std::vector<int32_t> senones;         // per frame
  std::vector<int32_t> mdef_phones;     // per phone segment: the triphone used
};

// `path` must be a path of `graph` (as the recursions return).
Alignment AlignmentFromPath(const SphinxLexicon& lexicon, const UtteranceGraph& graph, const ViterbiPath& path);

std::string WordCtm(const std::string& utterance, const Alignment& alignment, double frame_seconds);
std::string PhoneCtm(const std::string& utterance, const Alignment& alignment, double frame_seconds);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_ALIGNMENT_H_
