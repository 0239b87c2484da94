#include "kernels/hmm/utterance_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr int kStart = -1;  // the utterance's start, as a predecessor
constexpr int kNoContext = -1;

// A phone of the word-level graph, before context expansion.
struct Token {
  int base = 0;
  int word = -1, filler = -1, pronunciation = 0;
  char position = '-';                       // '-' for fillers
  std::vector<std::pair<int, float>> preds;  // token (or kStart) and branch weight
  std::vector<int> succs;
  bool final = false;
};

// One context copy of a token: its contexts and its states.
struct Copy {
  int left = kNoContext, right = kNoContext;
  int mdef_phone = 0;
  int first_state = 0;
  int phone_index = 0;  // into UtteranceGraph::phones
};

class GraphCompiler {
 public:
  GraphCompiler(const SphinxLexicon& lexicon, const UtteranceGraphOptions& options)
      : lex_(lexicon), options_(options) {}

  absl::StatusOr<UtteranceGraph> Compile(const std::vector<std::string>& words);

 private:
  struct Filler {
    std::string word;
    std::vector<Pronunciation> prons;
    float log_weight;
  };
  absl::Status CollectFillers();
  absl::StatusOr<std::vector<int>> Bases(const std::string& word, const Pronunciation& pron) const;
  // Adds a chain of tokens after `entries`; returns its last token.
  int AddChain(const std::vector<int>& bases, int word, int filler, int pron,
               const std::vector<std::pair<int, float>>& entries);
  // The filler tokens of one boundary; returns the ends that may follow it.
  std::vector<int> AddBoundary(const std::vector<int>& ends);
  int Context(int token) const { return token == kStart || tokens_[token].filler >= 0 ? lex_.silence : tokens_[token].base; }
  void ExpandCopies();
  absl::Status AddStatesAndArcs();

  const SphinxLexicon& lex_;
  const UtteranceGraphOptions& options_;
  std::vector<Filler> fillers_;
  std::vector<Token> tokens_;
  std::vector<std::vector<Copy>> copies_;  // per token
  HmmGraphBuilder builder_;
  UtteranceGraph out_;
};

absl::Status GraphCompiler::CollectFillers() {
  const float lw = options_.language_weight;
  const float wip = lw * std::log(options_.word_insertion_penalty);
  // In name order, so that graphs do not depend on hash order.
  const std::map<std::string, std::vector<Pronunciation>> sorted(lex_.fillers.words().begin(),
                                                                 lex_.fillers.words().end());
  for (const auto& [word, prons] : sorted) {
    if (word == "<s>" || word == "</s>") continue;
    const bool silence = word == "<sil>";
    if (!silence && !options_.noise_fillers) continue;
    const float p = silence ? options_.silence_probability : options_.filler_probability;
    fillers_.push_back({word, prons, lw * std::log(p) + wip});
  }
  if (fillers_.empty() && lex_.silence >= 0) fillers_.push_back({"<sil>", {{"SIL"}}, lw * std::log(options_.silence_probability) + wip});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> GraphCompiler::Bases(const std::string& word, const Pronunciation& pron) const {
  std::vector<int> bases;
  for (const std::string& phone : pron) {
    const int base = lex_.BaseId(phone);
    if (base < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", word.substr(0, 80), "\" uses the phone ", phone.substr(0, 40), ", which the model does not have"));
    }
    bases.push_back(base);
  }
  return bases;
}

int GraphCompiler::AddChain(const std::vector<int>& bases, int word, int filler, int pron,
                            const std::vector<std::pair<int, float>>& entries) {
  int prev = -2;
  for (size_t k = 0; k < bases.size(); ++k) {
    Token token;
    token.base = bases[k];
    token.word = word;
    token.filler = filler;
    token.pronunciation = pron;
    if (filler < 0) token.position = bases.size() == 1 ? 's' : k == 0 ? 'b' : k + 1 == bases.size() ? 'e' : 'i';
    const int id = static_cast<int>(tokens_.size());
    if (k == 0) {
      token.preds = entries;
      for (const auto& [from, weight] : entries) {
        if (from != kStart) tokens_[from].succs.push_back(id);
      }
    } else {
      token.preds = {{prev, 0.0f}};
      tokens_[prev].succs.push_back(id);
    }
    tokens_.push_back(std::move(token));
    prev = id;
  }
  return prev;
}

std::vector<int> GraphCompiler::AddBoundary(const std::vector<int>& ends) {
  std::vector<int> after = ends;  // the filler is optional
  for (size_t f = 0; f < fillers_.size(); ++f) {
    for (size_t p = 0; p < fillers_[f].prons.size(); ++p) {
      std::vector<int> bases;
      for (const std::string& phone : fillers_[f].prons[p]) bases.push_back(lex_.BaseId(phone));
      if (std::count(bases.begin(), bases.end(), -1) > 0) continue;  // a filler the model lacks
      std::vector<std::pair<int, float>> entries;
      for (int e : ends) entries.push_back({e, fillers_[f].log_weight});
      after.push_back(AddChain(bases, -1, static_cast<int>(f), static_cast<int>(p), entries));
    }
  }
  return after;
}

void GraphCompiler::ExpandCopies() {
  copies_.resize(tokens_.size());
  for (size_t v = 0; v < tokens_.size(); ++v) {
    const Token& token = tokens_[v];
    if (token.filler >= 0) {
      copies_[v].push_back({kNoContext, kNoContext, token.base});
      continue;
    }
    std::set<int> lefts, rights;
    for (const auto& [u, weight] : token.preds) lefts.insert(Context(u));
    for (int w : token.succs) rights.insert(Context(w));
    if (token.final) rights.insert(lex_.silence);
    for (int l : lefts) {
      for (int r : rights) {
        bool backed_off = false;
        const int phone = lex_.FindPhone(token.base, l, r, token.position, &backed_off);
        out_.backed_off_triphones += backed_off;
        copies_[v].push_back({l, r, phone});
      }
    }
  }
}

absl::Status GraphCompiler::AddStatesAndArcs() {
  const int n = lex_.num_emit;
  std::map<int32_t, int32_t> column_of;  // senone -> column, filled after
  std::vector<int32_t> state_senone;
  for (size_t v = 0; v < tokens_.size(); ++v) {
    for (Copy& copy : copies_[v]) {
      const SphinxPhone& phone = lex_.mdef.phones[copy.mdef_phone];
      copy.phone_index = static_cast<int>(out_.phones.size());
      copy.first_state = -1;
      for (int s = 0; s < n; ++s) {
        const int32_t state = builder_.AddState(0);
        if (s == 0) copy.first_state = state;
        state_senone.push_back(phone.senones[s]);
        out_.state_phone.push_back(copy.phone_index);
        column_of[phone.senones[s]] = 0;
      }
      out_.phones.push_back({copy.mdef_phone, tokens_[v].base, tokens_[v].word, tokens_[v].filler,
                             tokens_[v].pronunciation, copy.first_state});
      for (int from = 0; from < n; ++from) {
        for (int to = from; to < n; ++to) {
          const float p = lex_.transitions.at(phone.tmat, from, to);
          if (p > 0.0f) {
            builder_.AddArc(copy.first_state + from, copy.first_state + to, std::log(p),
                            SphinxTransitionSlot(phone.tmat, from, to, n));
          }
        }
      }
    }
  }
  // Between phones: every exit of a predecessor copy whose contexts agree.
  for (size_t v = 0; v < tokens_.size(); ++v) {
    const Token& token = tokens_[v];
    for (const Copy& into : copies_[v]) {
      for (const auto& [u, weight] : token.preds) {
        const bool agrees_left = token.filler >= 0 || into.left == Context(u);
        if (!agrees_left) continue;
        if (u == kStart) {
          builder_.AddInitial(into.first_state, weight);
          continue;
        }
        for (const Copy& from : copies_[u]) {
          if (tokens_[u].filler < 0 && from.right != Context(static_cast<int>(v))) continue;
          const SphinxPhone& phone = lex_.mdef.phones[from.mdef_phone];
          for (int s = 0; s < n; ++s) {
            const float p = lex_.transitions.at(phone.tmat, s, n);
            if (p > 0.0f) {
              builder_.AddArc(from.first_state + s, into.first_state, std::log(p) + weight,
                              SphinxTransitionSlot(phone.tmat, s, n, n));
            }
          }
        }
      }
    }
    if (!token.final) continue;
    for (const Copy& from : copies_[v]) {
      if (token.filler < 0 && from.right != lex_.silence) continue;
      const SphinxPhone& phone = lex_.mdef.phones[from.mdef_phone];
      for (int s = 0; s < n; ++s) {
        const float p = lex_.transitions.at(phone.tmat, s, n);
        if (p > 0.0f) builder_.AddFinal(from.first_state + s, std::log(p), SphinxTransitionSlot(phone.tmat, s, n, n));
      }
    }
  }
  std::vector<int32_t> columns;
  for (auto& [senone, column] : column_of) {
    column = static_cast<int32_t>(columns.size());
    columns.push_back(senone);
  }
  GMM_RETURN_IF_ERROR(builder_.Finish(std::move(columns), &out_.hmm));
  for (size_t s = 0; s < state_senone.size(); ++s) out_.hmm.emission[s] = column_of.at(state_senone[s]);
  return absl::OkStatus();
}

absl::StatusOr<UtteranceGraph> GraphCompiler::Compile(const std::vector<std::string>& words) {
  if (words.empty()) return absl::InvalidArgumentError("the transcript has no words");
  GMM_RETURN_IF_ERROR(CollectFillers());
  out_.words = words;
  for (const Filler& f : fillers_) out_.filler_words.push_back(f.word);
  std::vector<int> ends = AddBoundary({kStart});
  for (size_t w = 0; w < words.size(); ++w) {
    const std::vector<Pronunciation>* prons = lex_.dictionary.Find(words[w]);
    if (prons == nullptr) {
      return absl::NotFoundError(absl::StrCat("\"", words[w].substr(0, 80), "\" (word ", w + 1,
                                              ") is not in the dictionary"));
    }
    std::vector<std::pair<int, float>> entries;
    for (int e : ends) entries.push_back({e, 0.0f});
    std::vector<int> word_ends;
    for (size_t p = 0; p < prons->size(); ++p) {
      GMM_ASSIGN_OR_RETURN(const std::vector<int> bases, Bases(words[w], (*prons)[p]));
      word_ends.push_back(AddChain(bases, static_cast<int>(w), -1, static_cast<int>(p), entries));
    }
    ends = AddBoundary(word_ends);
  }
  for (int e : ends) tokens_[e].final = true;
  ExpandCopies();
  GMM_RETURN_IF_ERROR(AddStatesAndArcs());
  return std::move(out_);
}

}  // namespace

absl::StatusOr<UtteranceGraph> CompileUtteranceGraph(const SphinxLexicon& lexicon, const std::vector<std::string>& words,
                                                     const UtteranceGraphOptions& options) {
  return GraphCompiler(lexicon, options).Compile(words);
}

}  // namespace gmmscore
