// What a Sphinx aligner reads besides the Gaussians: mdef's phone table
// (text and binary), transition_matrices, pronunciation dictionaries and
// transcripts; on the models Debian ships and on crafted text.
#include <sys/stat.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/pronunciation_dictionary.h"
#include "kernels/io/sphinx_model.h"
#include "kernels/io/transcripts.h"

namespace gmmscore {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kAn4 = "/usr/share/pocketsphinx/test/data/an4_ci_cont";
const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kDict = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
const std::string kLibrivox = "/usr/share/pocketsphinx/test/data/librivox/transcription";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

#define REQUIRE_PATH(path) \
  if (!Exists(path)) GTEST_SKIP() << path << " is missing: run tools/install_deps.sh"

// The rules every Sphinx phone table keeps: a triphone's senones belong to
// its base phone, it uses its base phone's transition matrix, each
// (base, left, right, position) appears once, every phone has the same
// number of states.
void ExpectConsistentPhoneTable(const SphinxMdef& mdef) {
  ASSERT_EQ(static_cast<int>(mdef.phones.size()), mdef.num_phones);
  std::set<std::tuple<int, int, int, char>> seen;
  const size_t states = mdef.phones[0].senones.size();
  for (int p = 0; p < mdef.num_phones; ++p) {
    const SphinxPhone& phone = mdef.phones[p];
    ASSERT_EQ(phone.senones.size(), states) << p;
    ASSERT_LT(phone.tmat, mdef.num_tmats);
    EXPECT_EQ(phone.tmat, mdef.phones[phone.base].tmat) << p;
    for (int s : phone.senones) EXPECT_EQ(mdef.senone_base_phone[s], phone.base) << p;
    EXPECT_TRUE(seen.insert({phone.base, phone.left, phone.right, phone.position}).second) << p;
    if (p < static_cast<int>(mdef.base_phones.size())) {
      EXPECT_EQ(phone.base, p);
      EXPECT_EQ(phone.position, '-');
      EXPECT_EQ(phone.left, -1);
    } else {
      EXPECT_THAT(std::string("beis"), HasSubstr(std::string(1, phone.position))) << p;
      EXPECT_GE(phone.left, 0);
      EXPECT_GE(phone.right, 0);
    }
  }
}

TEST(SphinxLexiconTest, BinaryMdefPhoneTableOfEnUs) {
  REQUIRE_PATH(kEnUs);
  const absl::StatusOr<SphinxMdef> mdef = ReadSphinxMdef(kEnUs + "/mdef");
  ASSERT_TRUE(mdef.ok()) << mdef.status();
  EXPECT_TRUE(mdef->binary);
  ExpectConsistentPhoneTable(*mdef);
  std::map<std::string, int> base;
  for (size_t i = 0; i < mdef->base_phones.size(); ++i) base[mdef->base_phones[i]] = static_cast<int>(i);
  EXPECT_TRUE(mdef->phones[base.at("SIL")].filler);
  EXPECT_FALSE(mdef->phones[base.at("AA")].filler);
  // "the" in context: DH after silence, word-initial, before AH.
  int found = 0;
  for (const SphinxPhone& phone : mdef->phones) {
    if (phone.base == base.at("DH") && phone.left == base.at("SIL") && phone.right == base.at("AH") &&
        phone.position == 'b') {
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
}

TEST(SphinxLexiconTest, TextMdefAndTransitionsOfAn4) {
  REQUIRE_PATH(kAn4);
  const absl::StatusOr<SphinxMdef> mdef = ReadSphinxMdef(kAn4 + "/mdef");
  ASSERT_TRUE(mdef.ok()) << mdef.status();
  ExpectConsistentPhoneTable(*mdef);
  EXPECT_EQ(mdef->num_tmats, 34);
  EXPECT_THAT(mdef->phones[1].senones, ElementsAre(3, 4, 5));
  const absl::StatusOr<SphinxTransitions> tmat = ReadSphinxTransitions(kAn4 + "/transition_matrices");
  ASSERT_TRUE(tmat.ok()) << tmat.status();
  EXPECT_EQ(tmat->num_tmats, mdef->num_tmats);
  EXPECT_EQ(tmat->num_emit, 3);
  for (int m = 0; m < tmat->num_tmats; ++m) {
    for (int from = 0; from < tmat->num_emit; ++from) {
      double sum = 0;
      for (int to = 0; to <= tmat->num_emit; ++to) sum += tmat->at(m, from, to);
      EXPECT_NEAR(sum, 1.0, 1e-6);
      EXPECT_GT(tmat->at(m, from, from), 0.0f);
    }
  }
  // Written back, the file reads the same.
  const absl::StatusOr<SphinxTransitions> again =
      DecodeSphinxTransitions(EncodeSphinxTransitions(*tmat), "written", 1e-4f);
  ASSERT_TRUE(again.ok()) << again.status();
  for (size_t i = 0; i < tmat->probs.size(); ++i) EXPECT_NEAR(again->probs[i], tmat->probs[i], 1e-7);
}

TEST(SphinxLexiconTest, EnUsTransitionsMatchItsMdef) {
  REQUIRE_PATH(kEnUs);
  const absl::StatusOr<SphinxMdef> mdef = ReadSphinxMdef(kEnUs + "/mdef");
  const absl::StatusOr<SphinxTransitions> tmat = ReadSphinxTransitions(kEnUs + "/transition_matrices");
  ASSERT_TRUE(mdef.ok() && tmat.ok()) << tmat.status();
  EXPECT_EQ(tmat->num_tmats, mdef->num_tmats);
  EXPECT_EQ(static_cast<size_t>(tmat->num_emit), mdef->phones[0].senones.size());
}

TEST(SphinxLexiconTest, TransitionsFloorNonZeroAndRefuseBackwardArcs) {
  SphinxTransitions t{.num_tmats = 1, .num_emit = 2, .probs = {0.5f, 0.5f, 0.0f, /**/ 0.0f, 0.99999f, 0.00001f}};
  const absl::StatusOr<SphinxTransitions> read = DecodeSphinxTransitions(EncodeSphinxTransitions(t), "t", 1e-4f);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->at(0, 0, 2), 0.0f);            // zero stays impossible
  EXPECT_NEAR(read->at(0, 1, 2), 1e-4 / (0.99999 + 1e-4), 1e-9);  // floored, renormalised
  t.probs[3] = 0.1f;  // state 1 -> state 0
  EXPECT_THAT(DecodeSphinxTransitions(EncodeSphinxTransitions(t), "t", 1e-4f).status().message(),
              HasSubstr("backwards"));
  t.probs = {0, 0, 0, 0, 1, 0};
  EXPECT_THAT(DecodeSphinxTransitions(EncodeSphinxTransitions(t), "t", 1e-4f).status().message(),
              HasSubstr("no way out"));
  EXPECT_EQ(DecodeSphinxTransitions("s3\nendhdr\n", "t").status().code(), absl::StatusCode::kDataLoss)
      << "a file that ends early";
}

TEST(SphinxLexiconTest, DictionaryAlternativesCommentsAndCase) {
  const absl::StatusOr<PronunciationDictionary> dict = ParsePronunciationDictionary(
      ";;; a comment\nthe DH AH\n\nread R IY D\nthe(2) DH IY\nread(2) R EH D # past tense\n", "d");
  ASSERT_TRUE(dict.ok()) << dict.status();
  ASSERT_NE(dict->Find("the"), nullptr);
  EXPECT_THAT(*dict->Find("The"), ElementsAre(ElementsAre("DH", "AH"), ElementsAre("DH", "IY")));
  EXPECT_THAT(*dict->Find("read"), ElementsAre(ElementsAre("R", "IY", "D"), ElementsAre("R", "EH", "D")));
  EXPECT_EQ(dict->Find("cat"), nullptr);
  EXPECT_THAT(ParsePronunciationDictionary("a AH\nb\n", "d").status().message(), HasSubstr("d, line 2"));
  EXPECT_THAT(ParsePronunciationDictionary("a(x) AH\n", "d").status().message(), HasSubstr("suffix"));
}

TEST(SphinxLexiconTest, CmudictOfEnUs) {
  REQUIRE_PATH(kDict);
  const absl::StatusOr<PronunciationDictionary> dict = ReadPronunciationDictionary(kDict);
  ASSERT_TRUE(dict.ok()) << dict.status();
  int64_t pronunciations = 0;
  for (const auto& [word, prons] : dict->words()) pronunciations += static_cast<int64_t>(prons.size());
  EXPECT_EQ(pronunciations, 134723) << "one per line of the file";
  EXPECT_GT(dict->num_words(), 120000);
  ASSERT_NE(dict->Find("dashwood"), nullptr);
  EXPECT_EQ(dict->Find("the")->size(), 2u);
}

TEST(SphinxLexiconTest, TranscriptsInBothFormats) {
  const absl::StatusOr<std::vector<Transcript>> sphinx =
      ParseTranscripts("<s> ten of clubs </s> (001)\n\nfive five (002)\n<s> </s> (003)\n", "t");
  ASSERT_TRUE(sphinx.ok()) << sphinx.status();
  ASSERT_EQ(sphinx->size(), 3u);
  EXPECT_EQ((*sphinx)[0].utterance, "001");
  EXPECT_THAT((*sphinx)[0].words, ElementsAre("ten", "of", "clubs"));
  EXPECT_THAT((*sphinx)[1].words, ElementsAre("five", "five"));
  EXPECT_TRUE((*sphinx)[2].words.empty());
  const absl::StatusOr<std::vector<Transcript>> kaldi = ParseTranscripts("u1 hello world\nu2\n", "t");
  ASSERT_TRUE(kaldi.ok()) << kaldi.status();
  EXPECT_THAT((*kaldi)[0].words, ElementsAre("hello", "world"));
  EXPECT_TRUE((*kaldi)[1].words.empty());
  EXPECT_THAT(ParseTranscripts("a b (1)\nu2 c\n", "t").status().message(), HasSubstr("t, line 2: mixes"));
  EXPECT_THAT(ParseTranscripts("u1 a\nu1 b\n", "t").status().message(), HasSubstr("twice"));
  EXPECT_THAT(ParseTranscripts("<s> a b </s>\n", "t").status().message(), HasSubstr("utterance id"));
}

TEST(SphinxLexiconTest, LibrivoxTranscription) {
  REQUIRE_PATH(kLibrivox);
  const absl::StatusOr<std::vector<Transcript>> all = ReadTranscripts(kLibrivox);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[1].utterance, "sense_and_sensibility_01_austen_64kb-0880");
  EXPECT_THAT((*all)[1].words, ElementsAre("he", "was", "not", "an", "ill", "disposed", "young", "man"));
}

}  // namespace
}  // namespace gmmscore
