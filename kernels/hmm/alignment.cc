#include "kernels/hmm/alignment.h"

#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

void Extend(std::vector<AlignedSegment>* segments, bool same, std::string label, int32_t word, int64_t t) {
  if (same && !segments->empty()) {
    ++segments->back().num_frames;
    return;
  }
  segments->push_back({std::move(label), word, t, 1});
}

std::string Ctm(const std::string& utterance, const std::vector<AlignedSegment>& segments, double frame_seconds,
                bool keep_fillers) {
  std::string out;
  for (const AlignedSegment& s : segments) {
    if (!keep_fillers && s.word < 0) continue;
    absl::StrAppendFormat(&out, "%s 1 %.2f %.2f %s\n", utterance, s.first_frame * frame_seconds,
                          s.num_frames * frame_seconds, s.label);
  }
  return out;
}

}  // namespace

Alignment AlignmentFromPath(const SphinxLexicon& lexicon, const UtteranceGraph& graph, const ViterbiPath& path) {
  Alignment out;
  out.log_likelihood = path.log_likelihood;
  int32_t prev_phone = -1;
  for (int64_t t = 0; t < static_cast<int64_t>(path.states.size()); ++t) {
    const int32_t state = path.states[t];
    const int32_t phone_index = graph.state_phone[state];
    const GraphPhone& phone = graph.phones[phone_index];
    out.senones.push_back(graph.hmm.columns[graph.hmm.emission[state]]);
    const bool same_phone = phone_index == prev_phone;
    if (!same_phone) out.mdef_phones.push_back(phone.mdef_phone);
    Extend(&out.phones, same_phone, lexicon.mdef.base_phones[phone.base], phone.word, t);
    // A new word starts when the word or filler changes: one boundary holds
    // at most one filler, so adjacent filler phones are one occurrence.
    bool same_word = false;
    if (prev_phone >= 0) {
      const GraphPhone& before = graph.phones[prev_phone];
      same_word = before.word == phone.word && before.filler == phone.filler;
    }
    const std::string label = phone.word >= 0 ? graph.words[phone.word] : graph.filler_words[phone.filler];
    Extend(&out.words, same_word, label, phone.word, t);
    prev_phone = phone_index;
  }
  return out;
}

std::string WordCtm(const std::string& utterance, const Alignment& alignment, double frame_seconds) {
  return Ctm(utterance, alignment.words, frame_seconds, /*keep_fillers=*/false);
}

std::string PhoneCtm(const std::string& utterance, const Alignment& alignment, double frame_seconds) {
  return Ctm(utterance, alignment.phones, frame_seconds, /*keep_fillers=*/true);
}

}  // namespace gmmscore
