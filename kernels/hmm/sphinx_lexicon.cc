#include "kernels/hmm/sphinx_lexicon.h"

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

uint64_t TriphoneKey(int base, int left, int right, char position) {
  const auto field = [](int v) { return static_cast<uint64_t>(static_cast<uint16_t>(v)); };
  return (field(base) << 48) | (field(left) << 32) | (field(right) << 16) | static_cast<uint8_t>(position);
}

}  // namespace

int SphinxLexicon::BaseId(const std::string& name) const {
  const auto it = base_ids.find(name);
  return it == base_ids.end() ? -1 : it->second;
}

int SphinxLexicon::FindPhone(int base, int left, int right, char position, bool* backed_off) const {
  if (backed_off != nullptr) *backed_off = false;
  if (left < 0 || right < 0) return base;
  const auto find = [&](int l, int r, char pos) {
    const auto it = triphones.find(TriphoneKey(base, l, r, pos));
    return it == triphones.end() ? -1 : it->second;
  };
  if (const int exact = find(left, right, position); exact >= 0) return exact;
  if (backed_off != nullptr) *backed_off = true;
  // bin_mdef_phone_id_nearest: other positions, then SIL for the contexts
  // a word edge touches, then the base phone.
  for (const char pos : {'i', 'b', 'e', 's'}) {
    if (const int p = find(left, right, pos); p >= 0) return p;
  }
  const bool left_edge = position == 'b' || position == 's', right_edge = position == 'e' || position == 's';
  const int l = left_edge ? silence : left, r = right_edge ? silence : right;
  if (const int p = find(l, r, position); p >= 0) return p;
  for (const char pos : {'i', 'b', 'e', 's'}) {
    if (const int p = find(l, r, pos); p >= 0) return p;
  }
  return base;
}

absl::StatusOr<SphinxLexicon> MakeSphinxLexicon(SphinxMdef mdef, SphinxTransitions transitions,
                                                PronunciationDictionary dictionary, PronunciationDictionary fillers) {
  SphinxLexicon lexicon;
  if (mdef.phones.empty()) return absl::InvalidArgumentError("mdef has no phones");
  lexicon.num_emit = static_cast<int>(mdef.phones[0].senones.size());
  for (size_t p = 0; p < mdef.phones.size(); ++p) {
    const SphinxPhone& phone = mdef.phones[p];
    if (static_cast<int>(phone.senones.size()) != lexicon.num_emit) {
      return absl::InvalidArgumentError(absl::StrCat("mdef phone ", p, " has ", phone.senones.size(),
                                                     " states, phone 0 has ", lexicon.num_emit,
                                                     ": mixed topologies are not supported"));
    }
    if (phone.tmat >= transitions.num_tmats) {
      return absl::InvalidArgumentError(absl::StrCat("mdef phone ", p, " uses transition matrix ", phone.tmat,
                                                     ", the file has ", transitions.num_tmats));
    }
    if (phone.position != '-') {
      lexicon.triphones[TriphoneKey(phone.base, phone.left, phone.right, phone.position)] = static_cast<int>(p);
    }
  }
  if (transitions.num_emit != lexicon.num_emit) {
    return absl::InvalidArgumentError(absl::StrCat("transition matrices have ", transitions.num_emit,
                                                   " emitting states, mdef's phones ", lexicon.num_emit));
  }
  for (size_t b = 0; b < mdef.base_phones.size(); ++b) lexicon.base_ids[mdef.base_phones[b]] = static_cast<int>(b);
  lexicon.silence = lexicon.BaseId("SIL");
  if (lexicon.silence < 0) return absl::InvalidArgumentError("mdef has no SIL phone");
  lexicon.mdef = std::move(mdef);
  lexicon.transitions = std::move(transitions);
  lexicon.dictionary = std::move(dictionary);
  lexicon.fillers = std::move(fillers);
  return lexicon;
}

absl::StatusOr<SphinxLexicon> LoadSphinxLexicon(const std::string& model_dir, const std::string& dictionary_path) {
  GMM_ASSIGN_OR_RETURN(SphinxMdef mdef, ReadSphinxMdef(model_dir + "/mdef"));
  GMM_ASSIGN_OR_RETURN(SphinxTransitions transitions, ReadSphinxTransitions(model_dir + "/transition_matrices"));
  GMM_ASSIGN_OR_RETURN(PronunciationDictionary dictionary, ReadPronunciationDictionary(dictionary_path));
  GMM_ASSIGN_OR_RETURN(PronunciationDictionary fillers, ReadPronunciationDictionary(model_dir + "/noisedict"));
  return MakeSphinxLexicon(std::move(mdef), std::move(transitions), std::move(dictionary), std::move(fillers));
}

}  // namespace gmmscore
