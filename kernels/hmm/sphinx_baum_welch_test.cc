// Baum-Welch of a CMU Sphinx continuous model (an4_ci_cont) on real speech
// (the cards recordings): the training likelihood never falls, the model
// written back reads again, and pocketsphinx itself decodes with it. A PTM
// model (en-us) has its transitions re-estimated only.
#include "kernels/hmm/sphinx_baum_welch.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/backends/stats_backend_factory.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/hmm/sphinx_test_corpus.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kAn4 = PocketsphinxRoot() + "/test/data/an4_ci_cont";
const std::string kEnUs = PocketsphinxRoot() + "/model/en-us/en-us";
const std::string kDict = PocketsphinxRoot() + "/model/en-us/cmudict-en-us.dict";
const std::string kCards = PocketsphinxRoot() + "/test/data/cards";

SphinxTestCorpus Cards(const std::string& model_dir) {
  return LoadSphinxTestCorpus(model_dir, kCards + "/cards.transcription", kCards);
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

TEST(SphinxBaumWelchTest, ContinuousModelLikelihoodRisesAndPocketsphinxDecodesWithIt) {
  if (!PathExists(kAn4) || !PathExists(kCards) || !PathExists(kDict)) GTEST_SKIP() << "pocketsphinx data missing";
  const SphinxTestCorpus cards = Cards(kAn4);
  const absl::StatusOr<SphinxLexicon> lexicon = LoadSphinxLexicon(kAn4, kDict);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status();
  std::unique_ptr<ScoringBackend> scorer = CreateCpuBackend({.num_threads = 2});
  auto stats = CreateStatsBackend("cpu");
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::vector<SphinxBaumWelchIteration> iterations;
  const absl::StatusOr<SphinxModelFiles> trained =
      TrainSphinxModel(kAn4, *lexicon, cards.inputs, *scorer, **stats, {.iterations = 4, .threads = 2},
                       [&](const SphinxBaumWelchIteration& it) { iterations.push_back(it); });
  ASSERT_TRUE(trained.ok()) << trained.status();
  ASSERT_EQ(iterations.size(), 4u);
  for (const SphinxBaumWelchIteration& it : iterations) {
    std::printf("iteration %d: %.4f per frame over %lld frames, %d utterances, %.3f s\n", it.iteration,
                it.loglike_per_frame, static_cast<long long>(it.frames), it.utterances, it.seconds);
    EXPECT_EQ(it.utterances, 5);
    EXPECT_TRUE(it.failed.empty());
  }
  for (size_t i = 1; i < iterations.size(); ++i) {
    EXPECT_GE(iterations[i].loglike_per_frame, iterations[i - 1].loglike_per_frame - 1e-4) << "iteration " << i + 1;
  }
  EXPECT_GT(iterations.back().loglike_per_frame, iterations.front().loglike_per_frame + 0.5)
      << "four iterations on five utterances fit them better";

  const std::string out = ::testing::TempDir() + "/an4_bw";
  std::filesystem::remove_all(out);
  ASSERT_TRUE(WriteSphinxModelDirectory(*trained, kAn4, out).ok());
  const absl::StatusOr<SphinxModel> back = ReadSphinxModel(out);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model.num_states(), 102);
  const absl::StatusOr<SphinxTransitions> tmat = ReadSphinxTransitions(out + "/transition_matrices");
  ASSERT_TRUE(tmat.ok());
  for (int m = 0; m < tmat->num_tmats; ++m) {
    for (int from = 0; from < tmat->num_emit; ++from) {
      double sum = 0;
      for (int to = 0; to <= tmat->num_emit; ++to) sum += tmat->at(m, from, to);
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  if (!PathExists("/usr/bin/pocketsphinx_batch")) GTEST_SKIP() << "pocketsphinx_batch missing: run tools/install_deps.sh";
  // pocketsphinx decodes the recordings with the new model over a grammar of
  // the five sentences (the cmudict entries of their words: an4 lacks NG,
  // which the cards grammar's "king" needs).
  const std::string dict = out + "/cards.dict", gram = out + "/cards.gram", ctl = out + "/cards.ctl";
  Shell(absl::StrCat("grep -E '^(ten|of|clubs|four|queen|seven|five|eight|spades|hearts)(\\(2\\))? ' ", kDict, " > ",
                     dict));
  Shell(absl::StrCat("printf '#JSGF V1.0;\\ngrammar cards;\\npublic <s> = ten of clubs | four queen of clubs | seven "
                     "of clubs | five five | eight of spades four of clubs seven of hearts;\\n' > ",
                     gram, "; printf '001\\n002\\n003\\n004\\n005\\n' > ", ctl));
  const std::string decoded =
      Shell(absl::StrCat("pocketsphinx_batch -hmm ", out, " -dict ", dict, " -jsgf ", gram, " -ctl ", ctl, " -cepdir ",
                         kCards, " -cepext .wav -adcin yes -adchdr 44 -hyp /dev/stdout 2>/dev/null"));
  std::printf("pocketsphinx with the re-estimated model:\n%s", decoded.c_str());
  EXPECT_EQ(std::count(decoded.begin(), decoded.end(), '\n'), 5) << decoded;
  for (const Transcript& t : cards.transcripts) {
    std::string words;
    for (const std::string& w : t.words) words += (words.empty() ? "" : " ") + w;
    EXPECT_THAT(decoded, HasSubstr(absl::StrCat(words, " (", t.utterance))) << "decoded as it was trained";
  }
}

TEST(SphinxBaumWelchTest, PtmModelReestimatesTransitionsOnly) {
  if (!PathExists(kEnUs) || !PathExists(kCards)) GTEST_SKIP() << "pocketsphinx data missing";
  const SphinxTestCorpus cards = Cards(kEnUs);
  const absl::StatusOr<SphinxLexicon> lexicon = LoadSphinxLexicon(kEnUs, kDict);
  ASSERT_TRUE(lexicon.ok());
  std::unique_ptr<ScoringBackend> scorer = CreateCpuBackend({.num_threads = 2});
  auto stats = CreateStatsBackend("cpu");
  ASSERT_TRUE(stats.ok());
  const auto refused = TrainSphinxModel(kEnUs, *lexicon, cards.inputs, *scorer, **stats, {}, nullptr);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(refused.status().message(), HasSubstr("ptm"));
  std::vector<double> loglikes;
  const auto trained = TrainSphinxModel(
      kEnUs, *lexicon, cards.inputs, *scorer, **stats, {.iterations = 2, .update_gmm = false, .threads = 2},
      [&](const SphinxBaumWelchIteration& it) { loglikes.push_back(it.loglike_per_frame); });
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_FALSE(trained->gmm);
  ASSERT_EQ(loglikes.size(), 2u);
  EXPECT_GE(loglikes[1], loglikes[0] - 1e-4);
  const std::string out = ::testing::TempDir() + "/en_us_bw";
  std::filesystem::remove_all(out);
  ASSERT_TRUE(WriteSphinxModelDirectory(*trained, kEnUs, out).ok());
  EXPECT_TRUE(PathExists(out + "/sendump")) << "the weights are the source's";
  EXPECT_TRUE(ReadSphinxModel(out).ok());
}

TEST(SphinxBaumWelchTest, BadUtterancesAreLeftOutAndReported) {
  if (!PathExists(kAn4) || !PathExists(kCards)) GTEST_SKIP() << "pocketsphinx data missing";
  SphinxTestCorpus cards = Cards(kAn4);
  const absl::StatusOr<SphinxLexicon> lexicon = LoadSphinxLexicon(kAn4, kDict);
  ASSERT_TRUE(lexicon.ok());
  cards.inputs[1].words.push_back("zzzyzzx");
  cards.inputs[3].features.rows = 5;
  std::unique_ptr<ScoringBackend> scorer = CreateCpuBackend({.num_threads = 2});
  auto stats = CreateStatsBackend("cpu");
  std::vector<SphinxBaumWelchIteration> its;
  const auto trained = TrainSphinxModel(kAn4, *lexicon, cards.inputs, *scorer, **stats, {.iterations = 1},
                                        [&](const SphinxBaumWelchIteration& it) { its.push_back(it); });
  ASSERT_TRUE(trained.ok()) << trained.status();
  ASSERT_EQ(its.size(), 1u);
  EXPECT_EQ(its[0].utterances, 3);
  ASSERT_EQ(its[0].failed.size(), 2u);
  EXPECT_EQ(its[0].failed[0].first, 1);
  EXPECT_THAT(its[0].failed[0].second, HasSubstr("zzzyzzx"));
  EXPECT_EQ(its[0].failed[1].first, 3);
  EXPECT_THAT(its[0].failed[1].second, HasSubstr("5 frames"));
  EXPECT_EQ(TrainSphinxModel(kAn4, *lexicon, {}, *scorer, **stats, {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
