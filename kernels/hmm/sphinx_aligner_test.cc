// Forced alignment of real speech (pocketsphinx-testdata's librivox and
// cards recordings) with the en-us model: the words come back in order,
// segments tile the audio, and word boundaries are compared with
// pocketsphinx's own FSG alignment of the same transcripts
// (testdata/ps_align, made by tools/pocketsphinx_align_reference.sh).
// Bad input fails per utterance while the rest of the batch aligns.
#include "kernels/hmm/sphinx_aligner.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/hmm/ctm.h"
#include "kernels/hmm/sphinx_test_corpus.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kModel = PocketsphinxRoot() + "/model/en-us/en-us";
const std::string kDict = PocketsphinxRoot() + "/model/en-us/cmudict-en-us.dict";
const std::string kData = PocketsphinxRoot() + "/test/data";

class SphinxAlignerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PathExists(kModel) || !PathExists(kDict) || !PathExists(kData)) GTEST_SKIP() << "pocketsphinx data missing: run tools/install_deps.sh";
    cpu_ = CreateCpuBackend({.num_threads = 2});
    auto aligner = SphinxAligner::Create(kModel, kDict, cpu_.get(), {.threads = 2});
    ASSERT_TRUE(aligner.ok()) << aligner.status();
    aligner_ = *std::move(aligner);
  }

  // Aligns a corpus, checks every alignment's shape, returns its word CTM.
  CtmFile AlignAndCheck(const SphinxTestCorpus& corpus) {
    const std::vector<AlignInput>& batch = corpus.inputs;
    const auto results = aligner_->Align(batch);
    std::string ctm;
    for (size_t u = 0; u < results.size(); ++u) {
      EXPECT_TRUE(results[u].ok()) << batch[u].utterance << ": " << results[u].status();
      if (!results[u].ok()) continue;
      const Alignment& a = *results[u];
      std::vector<std::string> words;
      int64_t next = 0;
      for (const AlignedSegment& s : a.words) {
        EXPECT_EQ(s.first_frame, next) << "segments tile the frames";
        next += s.num_frames;
        if (s.word >= 0) words.push_back(s.label);
      }
      EXPECT_EQ(next, batch[u].features.rows);
      EXPECT_EQ(words, batch[u].words);
      EXPECT_EQ(static_cast<int64_t>(a.senones.size()), batch[u].features.rows);
      ctm += WordCtm(batch[u].utterance, a, aligner_->frame_seconds());
    }
    auto parsed = ParseCtm(ctm, "ours");
    EXPECT_TRUE(parsed.ok());
    return *parsed;
  }

  std::unique_ptr<ScoringBackend> cpu_;
  std::unique_ptr<SphinxAligner> aligner_;
};

TEST_F(SphinxAlignerTest, WordBoundariesAgreeWithPocketsphinx) {
  for (const auto& [name, transcripts, wavs] :
       {std::tuple{"librivox", kData + "/librivox/transcription", kData + "/librivox"},
        std::tuple{"cards", kData + "/cards/cards.transcription", kData + "/cards"}}) {
    const SphinxTestCorpus corpus = LoadSphinxTestCorpus(kModel, transcripts, wavs);
    const CtmFile ours = AlignAndCheck(corpus);
    auto text = io_internal::ReadFileToString(absl::StrCat(GMMSCORE_HMM_TESTDATA, "/ps_align/", name, ".ctm"));
    ASSERT_TRUE(text.ok()) << text.status();
    auto reference = ParseCtm(*text, name);
    ASSERT_TRUE(reference.ok());
    const BoundaryComparison c = CompareWordBoundaries(*reference, ours);
    EXPECT_TRUE(c.mismatched.empty());
    EXPECT_EQ(c.utterances, static_cast<int>(corpus.features.size()));
    std::printf("%s: %d words in %d utterances; boundary difference to pocketsphinx median %.0f ms, p90 %.0f ms, "
                "max %.0f ms; graphs %.3f s, scoring %.3f s, viterbi %.3f s\n",
                name, c.words, c.utterances, c.Percentile(50), c.Percentile(90), c.Percentile(100),
                aligner_->last_timing().graphs, aligner_->last_timing().scoring, aligner_->last_timing().viterbi);
    EXPECT_LE(c.Percentile(50), 20.0);
    EXPECT_LE(c.Percentile(90), 60.0);
  }
}

TEST_F(SphinxAlignerTest, BadUtterancesFailAloneWithClearErrors) {
  const SphinxTestCorpus corpus = LoadSphinxTestCorpus(kModel, kData + "/cards/cards.transcription", kData + "/cards");
  const FloatMatrix& good = corpus.features[0];
  FloatMatrix short_audio(12, good.cols());
  for (int64_t t = 0; t < 12; ++t) std::copy(good.row(t), good.row(t) + good.cols(), short_audio.row(t));
  FloatMatrix wrong_dim(good.rows(), 13);
  const std::vector<AlignInput> batch = {
      {"oov", good.view(), {"ten", "of", "clubzz"}},
      {"empty", good.view(), {}},
      {"short", short_audio.view(), {"ten", "of", "clubs"}},
      {"good", good.view(), corpus.transcripts[0].words},
      {"dim", wrong_dim.view(), {"ten"}},
  };
  const auto results = aligner_->Align(batch);
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(results[0].status().message(), HasSubstr("\"clubzz\" (word 3)"));
  EXPECT_EQ(results[1].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(results[2].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(results[2].status().message(), HasSubstr("12 frames"));
  EXPECT_TRUE(results[3].ok()) << results[3].status();
  EXPECT_EQ(results[4].status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gmmscore
