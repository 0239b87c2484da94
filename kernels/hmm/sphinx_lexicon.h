// SphinxLexicon: what compiling utterance graphs needs from a CMU Sphinx
// model directory and a pronunciation dictionary, read once and shared:
// mdef's phone table with a triphone index, the transition matrices, the
// dictionary and the model's filler dictionary (noisedict).
//
//   GMM_ASSIGN_OR_RETURN(SphinxLexicon lexicon, LoadSphinxLexicon(model_dir, "cmudict-en-us.dict"));
//   const int p = lexicon.FindPhone(base, left, right, 'b');   // an mdef phone, backing off
//
// Triphone back-off, when mdef has no (base, left, right, position), in
// pocketsphinx's order (bin_mdef_phone_id_nearest): the same contexts at
// the other word positions (i, b, e, s); SIL for the contexts at a word
// edge, at the position, then the others; the base phone alone. FindPhone
// never fails for a known base phone; `backed_off` says it backed off.
//
// Errors: those of the readers, naming the file; INVALID_ARGUMENT when mdef
// has phones of differing state counts, a transition file that disagrees
// with mdef, a dictionary phone the model lacks (naming word and phone;
// checked when a graph uses the word), no SIL phone.
// Thread safety: immutable after loading; FindPhone is const.
#ifndef GMMSCORE_KERNELS_HMM_SPHINX_LEXICON_H_
#define GMMSCORE_KERNELS_HMM_SPHINX_LEXICON_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/io/pronunciation_dictionary.h"
#include "kernels/io/sphinx_model.h"

namespace gmmscore {

struct SphinxLexicon {
  SphinxMdef mdef;
  SphinxTransitions transitions;
  PronunciationDictionary dictionary;
  PronunciationDictionary fillers;  // noisedict: "<sil> SIL", "[NOISE] +NSN+", ...
  int silence = -1;                 // the SIL base phone
  int num_emit = 0;                 // emitting states per phone
  std::unordered_map<std::string, int> base_ids;
  std::unordered_map<uint64_t, int> triphones;  // (base, left, right, position) -> mdef phone

  // The base phone id of `name`, or -1.
  int BaseId(const std::string& name) const;
  // The mdef phone for a base phone in context (see the file comment);
  // `backed_off` (optional) is set when the exact triphone is not in mdef.
  int FindPhone(int base, int left, int right, char position, bool* backed_off = nullptr) const;
};

absl::StatusOr<SphinxLexicon> LoadSphinxLexicon(const std::string& model_dir, const std::string& dictionary_path);
// For tests and callers that hold the parts already.
absl::StatusOr<SphinxLexicon> MakeSphinxLexicon(SphinxMdef mdef, SphinxTransitions transitions,
                                                PronunciationDictionary dictionary, PronunciationDictionary fillers);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPHINX_LEXICON_H_
