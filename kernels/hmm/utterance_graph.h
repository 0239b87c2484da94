// Utterance HMMs for forced alignment and Baum-Welch: a transcript compiled,
// with a CMU Sphinx model's phone table and a pronunciation dictionary, into
// a sparse left-to-right HmmGraph over the model's senones.
//
//   GMM_ASSIGN_OR_RETURN(SphinxLexicon lexicon, LoadSphinxLexicon(model_dir, dict));
//   GMM_ASSIGN_OR_RETURN(UtteranceGraph g, CompileUtteranceGraph(lexicon, {"he", "was", "not"}));
//   // score frames for g.hmm.columns (senone ids), run Viterbi, then
//   // g.phones[g.state_phone[s]] says which word, phone and triphone state s is.
//
// The graph. The words in order, each with all of its pronunciations side
// by side (alternatives join again after the word). Before the first word,
// between words and after the last, one optional filler: silence (<sil>,
// the SIL phone) or a noise filler from the model's noisedict ([NOISE],
// ...; <s> and </s> are not fillers). Filler phones are context-free; word
// phones are triphones with full cross-word context: a word's first phone
// gets one copy per distinct left context its predecessors give (their last
// phone, SIL after a filler or at the start), its last phone one copy per
// right context, and a copy connects only to neighbours that agree with its
// contexts. Word positions are b, i, e, and s for one-phone words; the
// triphone is looked up with pocketsphinx's back-off (sphinx_lexicon.h).
// Each phone copy is num_emit states with the mdef phone's senones, arcs
// from its transition matrix (self-loops, next, skips; zero probabilities
// left out); the exit probability goes onto the arcs into the next phones'
// first states and onto the final weights.
//
// Branch weights follow pocketsphinx's FSG search, in nats: entering a
// filler costs lw * (ln p + ln wip), with p = silprob (0.005) for silence,
// fillprob (1e-8) otherwise, lw = 6.5, wip = 0.65. Words pay nothing: every
// path has the same words. Alternative pronunciations are free.
//
// Errors: INVALID_ARGUMENT for an empty transcript or a dictionary phone the
// model does not have (naming word and phone); NOT_FOUND naming the first
// word that is not in the dictionary.
// Thread safety: compiling is reentrant over a shared const lexicon.
#ifndef GMMSCORE_KERNELS_HMM_UTTERANCE_GRAPH_H_
#define GMMSCORE_KERNELS_HMM_UTTERANCE_GRAPH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/hmm/hmm_graph.h"
#include "kernels/hmm/sphinx_lexicon.h"

namespace gmmscore {

struct UtteranceGraphOptions {
  float silence_probability = 0.005f;  // pocketsphinx -silprob
  float filler_probability = 1e-8f;    // -fillprob
  float language_weight = 6.5f;        // -lw
  float word_insertion_penalty = 0.65f;  // -wip (paid by fillers only here)
  bool noise_fillers = true;           // fillers other than silence
};

// One phone of the graph: a triphone (or filler phone) in its context.
struct GraphPhone {
  int32_t mdef_phone = 0;
  int32_t base = 0;
  int32_t word = -1;           // index into the transcript, -1 for a filler
  int32_t filler = -1;         // index into filler_words, -1 for a word's phone
  int32_t pronunciation = 0;   // which of the word's (or filler's) pronunciations
  int32_t first_state = 0;     // states [first_state, first_state + num_emit)
};

struct UtteranceGraph {
  HmmGraph hmm;                          // columns are senone ids
  std::vector<GraphPhone> phones;        // in state order
  std::vector<int32_t> state_phone;      // HMM state -> index into phones
  std::vector<std::string> words;        // the transcript
  std::vector<std::string> filler_words; // "<sil>", "[NOISE]", ...
  int backed_off_triphones = 0;          // phones whose exact triphone mdef lacks
};

absl::StatusOr<UtteranceGraph> CompileUtteranceGraph(const SphinxLexicon& lexicon, const std::vector<std::string>& words,
                                                     const UtteranceGraphOptions& options = {});

// The Baum-Welch slot of a Sphinx transition (hmm_graph.h): tmat, from an
// emitting state, to a state or the exit (to == num_emit).
inline int32_t SphinxTransitionSlot(int tmat, int from, int to, int num_emit) {
  return (tmat * num_emit + from) * (num_emit + 1) + to;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_UTTERANCE_GRAPH_H_
