// Utterance graphs: on a small crafted Sphinx model, every word sequence a
// graph accepts is the transcript with optional fillers, and every arc
// between phones agrees with both triphones' contexts; errors for
// out-of-vocabulary words, empty transcripts and unknown phones; and
// graphs of the real en-us model for the librivox transcripts.
#include "kernels/hmm/utterance_graph.h"

#include <sys/stat.h>

#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/hmm/graph_test_util.h"
#include "kernels/hmm/sparse_hmm_cpu.h"
#include "kernels/io/transcripts.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

// SIL, +NSN+ (fillers), A, B, C; triphones of A, B, C in every context and
// position except every fifth, so that lookups back off; each phone has
// its own three senones and its base phone's matrix.
SphinxLexicon TinyLexicon() {
  const std::vector<std::string> bases = {"SIL", "+NSN+", "A", "B", "C"};
  std::string mdef;
  std::vector<std::string> lines;
  int senone = 0;
  for (size_t b = 0; b < bases.size(); ++b) {
    lines.push_back(absl::StrCat(bases[b], " - - - ", b < 2 ? "filler" : "n/a", " ", b, " ", senone, " ", senone + 1,
                                 " ", senone + 2, " N"));
    senone += 3;
  }
  int triphones = 0, skip = 0;
  for (int b = 2; b < 5; ++b) {
    for (int l : {0, 2, 3, 4}) {
      for (int r : {0, 2, 3, 4}) {
        for (char pos : std::string("beis")) {
          if (++skip % 5 == 0) continue;
          lines.push_back(absl::StrCat(bases[b], " ", bases[l], " ", bases[r], " ", std::string(1, pos), " n/a ", b, " ",
                                       senone, " ", senone + 1, " ", senone + 2, " N"));
          senone += 3;
          ++triphones;
        }
      }
    }
  }
  mdef = absl::StrCat("0.3\n5 n_base\n", triphones, " n_tri\n", 4 * (5 + triphones), " n_state_map\n", senone,
                      " n_tied_state\n15 n_tied_ci_state\n5 n_tied_tmat\n", absl::StrJoin(lines, "\n"), "\n");
  SphinxTransitions t{.num_tmats = 5, .num_emit = 3};
  for (int m = 0; m < 5; ++m) {
    for (float p : {0.6f, 0.3f, 0.1f, 0.0f, 0.0f, 0.6f, 0.3f, 0.1f, 0.0f, 0.0f, 0.7f, 0.3f}) t.probs.push_back(p);
  }
  auto parsed = DecodeSphinxMdef(mdef, "tiny mdef");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto dict = ParsePronunciationDictionary("ab A B\nc C\nx A\nx(2) B C\nbad A Q\n", "dict");
  auto fillers = ParsePronunciationDictionary("<s> SIL\n</s> SIL\n<sil> SIL\n[NOISE] +NSN+\n", "noisedict");
  auto lexicon = MakeSphinxLexicon(*std::move(parsed), std::move(t), *std::move(dict), *std::move(fillers));
  EXPECT_TRUE(lexicon.ok()) << lexicon.status();
  return *std::move(lexicon);
}

// The label of a phone: its word with the pronunciation, or its filler.
std::string Label(const UtteranceGraph& g, const GraphPhone& p) {
  return p.word >= 0 ? absl::StrCat(g.words[p.word], "/", p.pronunciation) : g.filler_words[p.filler];
}

// Every label sequence from an initial to a final phone, over the phone
// graph that the arcs between phones make.
std::set<std::string> LabelSequences(const UtteranceGraph& g) {
  const HmmGraph& h = g.hmm;
  std::vector<std::set<int>> next(g.phones.size());
  for (int32_t s = 0; s < h.num_states(); ++s) {
    for (int32_t a = h.arc_begin[s]; a < h.arc_begin[s + 1]; ++a) {
      const int from = g.state_phone[h.arc_source[a]], to = g.state_phone[s];
      if (from != to) next[from].insert(to);
    }
  }
  std::set<int> finals;
  for (int32_t s : h.final_states) finals.insert(g.state_phone[s]);
  std::set<std::string> out;
  std::function<void(int, std::vector<std::string>)> walk = [&](int phone, std::vector<std::string> labels) {
    const std::string label = Label(g, g.phones[phone]);
    if (labels.empty() || labels.back() != label) labels.push_back(label);
    if (finals.count(phone)) out.insert(absl::StrJoin(labels, " "));
    for (int to : next[phone]) walk(to, labels);
  };
  std::set<int> initials;
  for (int32_t s : h.initial_states) initials.insert(g.state_phone[s]);
  for (int phone : initials) walk(phone, {});
  return out;
}

TEST(UtteranceGraphTest, AcceptsTheTranscriptWithOptionalFillersOnly) {
  const SphinxLexicon lexicon = TinyLexicon();
  const absl::StatusOr<UtteranceGraph> g = CompileUtteranceGraph(lexicon, {"ab", "x"});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(ValidateHmmGraph(g->hmm).ok());
  const std::set<std::string> sequences = LabelSequences(*g);
  std::set<std::string> expected;
  const std::vector<std::string> filler = {"", "<sil> ", "[NOISE] "};
  for (const std::string& f0 : filler) {
    for (const std::string& f1 : filler) {
      for (const std::string& f2 : filler) {
        for (const std::string& x : {"x/0", "x/1"}) {
          std::string s = absl::StrCat(f0, "ab/0 ", f1, x, " ", f2);
          expected.insert(s.substr(0, s.size() - 1));
        }
      }
    }
  }
  EXPECT_EQ(sequences, expected);
  EXPECT_EQ(g->hmm.MinFrames(), 2 * 3) << "ab then x/0: two frames per phone with its skip";
  EXPECT_GT(g->backed_off_triphones, 0);
}

TEST(UtteranceGraphTest, ArcsBetweenPhonesAgreeWithTheirContexts) {
  const SphinxLexicon lexicon = TinyLexicon();
  const absl::StatusOr<UtteranceGraph> g = CompileUtteranceGraph(lexicon, {"x", "c", "ab", "x"});
  ASSERT_TRUE(g.ok()) << g.status();
  const HmmGraph& h = g->hmm;
  int checked = 0;
  const auto context = [&](const GraphPhone& p) { return p.filler >= 0 ? lexicon.silence : p.base; };
  for (int32_t s = 0; s < h.num_states(); ++s) {
    EXPECT_EQ(h.columns[h.emission[s]],
              lexicon.mdef.phones[g->phones[g->state_phone[s]].mdef_phone].senones[s - g->phones[g->state_phone[s]].first_state]);
    for (int32_t a = h.arc_begin[s]; a < h.arc_begin[s + 1]; ++a) {
      const GraphPhone& from = g->phones[g->state_phone[h.arc_source[a]]];
      const GraphPhone& to = g->phones[g->state_phone[s]];
      if (&from == &to) continue;
      ++checked;
      EXPECT_EQ(s, to.first_state) << "phones are entered at their first state";
      const SphinxPhone& want_to = lexicon.mdef.phones[lexicon.FindPhone(
          to.base, context(from), lexicon.mdef.phones[to.mdef_phone].right, lexicon.mdef.phones[to.mdef_phone].position)];
      if (to.filler < 0 && lexicon.mdef.phones[to.mdef_phone].left >= 0) {
        // The triphone used is the one for this left context (exact or backed off).
        EXPECT_EQ(&lexicon.mdef.phones[to.mdef_phone], &want_to);
      }
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(UtteranceGraphTest, FastRecursionsMatchTheReferenceOnUtteranceGraphs) {
  // Optional silences and noise, alternative pronunciations, context copies:
  // the CPU path against the float64 reference on compiled graphs.
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "GMMSCORE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const SphinxLexicon lexicon = TinyLexicon();
  std::vector<UtteranceGraph> graphs;
  std::vector<FloatMatrix> scores;
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"x"}, {"ab", "x"}, {"x", "c", "ab", "x", "x"}}) {
    graphs.push_back(*CompileUtteranceGraph(lexicon, words));
    for (int64_t frames : {int64_t{graphs.back().hmm.MinFrames()}, int64_t{40}, int64_t{320}}) {
      scores.push_back(RandomLoglikes(frames, static_cast<int>(graphs.back().hmm.columns.size()), rng));
    }
  }
  std::vector<const HmmGraph*> graph_ptrs;
  std::vector<ConstMatrixView> views;
  for (size_t k = 0; k < scores.size(); ++k) {
    graph_ptrs.push_back(&graphs[k / 3].hmm);
    views.push_back(scores[k].view());
  }
  ThreadPool pool(1);
  const auto paths = GraphViterbiCpu(graph_ptrs, views, &pool);
  const auto posts = GraphForwardBackwardCpu(graph_ptrs, views, true, &pool);
  for (size_t k = 0; k < views.size(); ++k) {
    const auto want_path = GraphViterbiReference(*graph_ptrs[k], views[k]);
    const auto want_post = GraphForwardBackwardReference(*graph_ptrs[k], views[k]);
    ASSERT_TRUE(want_path.ok() && paths[k].ok() && posts[k].ok()) << k << " " << want_path.status();
    EXPECT_EQ(paths[k]->states, want_path->states);
    EXPECT_NEAR(posts[k]->log_likelihood, want_post->log_likelihood, 1e-9 * std::abs(want_post->log_likelihood));
    for (size_t i = 0; i < want_post->gamma.size(); ++i) EXPECT_NEAR(posts[k]->gamma[i], want_post->gamma[i], 1e-9);
    for (size_t a = 0; a < want_post->arc_counts.size(); ++a) {
      EXPECT_NEAR(posts[k]->arc_counts[a], want_post->arc_counts[a], 1e-9 * std::max(1.0, want_post->arc_counts[a]));
    }
  }
}

TEST(UtteranceGraphTest, ErrorsNameTheWord) {
  const SphinxLexicon lexicon = TinyLexicon();
  const auto oov = CompileUtteranceGraph(lexicon, {"ab", "zebra"});
  EXPECT_EQ(oov.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(oov.status().message(), HasSubstr("\"zebra\" (word 2)"));
  EXPECT_EQ(CompileUtteranceGraph(lexicon, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(CompileUtteranceGraph(lexicon, {"bad"}).status().message(), HasSubstr("phone Q"));
}

TEST(UtteranceGraphTest, EnUsGraphsForLibrivox) {
  const std::string model = "/usr/share/pocketsphinx/model/en-us/en-us";
  struct stat info;
  if (::stat(model.c_str(), &info) != 0) GTEST_SKIP() << model << " is missing: run tools/install_deps.sh";
  const absl::StatusOr<SphinxLexicon> lexicon =
      LoadSphinxLexicon(model, "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict");
  ASSERT_TRUE(lexicon.ok()) << lexicon.status();
  const auto transcripts = ReadTranscripts("/usr/share/pocketsphinx/test/data/librivox/transcription");
  ASSERT_TRUE(transcripts.ok()) << transcripts.status();
  for (const Transcript& t : *transcripts) {
    const absl::StatusOr<UtteranceGraph> g = CompileUtteranceGraph(*lexicon, t.words);
    ASSERT_TRUE(g.ok()) << t.utterance << ": " << g.status();
    EXPECT_TRUE(ValidateHmmGraph(g->hmm).ok());
    EXPECT_LT(g->hmm.MinFrames(), 300) << t.utterance;
    EXPECT_LT(g->backed_off_triphones, static_cast<int>(g->phones.size()) / 4) << t.utterance;
  }
}

}  // namespace
}  // namespace gmmscore
