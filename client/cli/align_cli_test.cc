// `gmmscore align` on real speech: librivox audio through the model's front
// end, words out as CTM close to pocketsphinx's own alignment; phone CTMs
// and frame alignments; bad utterances get an error line each while the
// rest are aligned; usage errors.
#include <sys/stat.h>

#include "client/cli/cli_test_util.h"
#include "kernels/hmm/ctm.h"
#include "kernels/io/kaldi_int_vector_archive.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kModel = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kDict = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
const std::string kLibrivox = "/usr/share/pocketsphinx/test/data/librivox";

class AlignCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat info;
    if (::stat(kModel.c_str(), &info) != 0 || ::stat(kLibrivox.c_str(), &info) != 0) {
      GTEST_SKIP() << "pocketsphinx data missing: run tools/install_deps.sh";
    }
    std::string scp;
    for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
      const std::string utt = absl::StrCat("sense_and_sensibility_01_austen_64kb-", id);
      absl::StrAppend(&scp, utt, " ", kLibrivox, "/", utt, ".wav\n");
    }
    scp_ = Temp("wav.scp");
    WriteFile(scp_, scp);
  }
  std::vector<std::string> Args(const std::string& transcripts, const std::string& output) {
    return {"align", "--model", kModel, "--dict", kDict, "--transcripts", transcripts, "--audio", scp_,
            "--output", output, "--backend", "cpu"};
  }
  std::string scp_;
};

TEST_F(AlignCliTest, AudioToWordCtmCloseToPocketsphinx) {
  const std::string ctm = Temp("words.ctm"), frames = Temp("frames.txt");
  std::vector<std::string> args = Args(kLibrivox + "/transcription", "ctm:" + ctm);
  args.insert(args.end(), {"--frames", "ark,t:" + frames});
  const RunResult run = Gmmscore(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("aligned 5 of 5 utterances, 24.7 s of speech"));
  const auto ours = ParseCtm(ReadFile(ctm), ctm);
  const auto reference =
      ParseCtm(ReadFile(absl::StrCat(GMMSCORE_HMM_TESTDATA, "/ps_align/librivox.ctm")), "librivox.ctm");
  ASSERT_TRUE(ours.ok() && reference.ok());
  const BoundaryComparison c = CompareWordBoundaries(*reference, *ours);
  EXPECT_EQ(c.utterances, 5);
  EXPECT_EQ(c.words, 71);
  EXPECT_LE(c.Percentile(50), 20.0);
  const auto ali = ReadKaldiIntVectorArchive("ark,t:" + frames);
  ASSERT_TRUE(ali.ok()) << ali.status();
  ASSERT_EQ(ali->size(), 5u);
  EXPECT_EQ((*ali)[1].value.size(), 298u) << "one senone per frame: sphinxbase makes 298 of the 2.99 s";
}

TEST_F(AlignCliTest, PhoneCtmStartsWithSilence) {
  const RunResult run = Gmmscore(Args(kLibrivox + "/transcription", "ctm:-"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> args = Args(kLibrivox + "/transcription", "ctm:-");
  args.push_back("--phones");
  const RunResult phones = Gmmscore(args);
  ASSERT_EQ(phones.exit_code, 0) << phones.err;
  EXPECT_THAT(phones.out, HasSubstr("sense_and_sensibility_01_austen_64kb-0880 1 0.00 "));
  EXPECT_THAT(phones.out, HasSubstr(" SIL\n"));
  EXPECT_GT(std::count(phones.out.begin(), phones.out.end(), '\n'), std::count(run.out.begin(), run.out.end(), '\n'));
}

TEST_F(AlignCliTest, BadUtterancesGetAnErrorLineEachAndTheRestAlign) {
  const std::string transcripts = Temp("transcripts");
  WriteFile(transcripts,
            "<s> he was not an ill disposed young man </s> (sense_and_sensibility_01_austen_64kb-0880)\n"
            "<s> he might even have been made amiable himselfz </s> (sense_and_sensibility_01_austen_64kb-0930)\n"
            "<s> </s> (sense_and_sensibility_01_austen_64kb-0890)\n"
            "<s> hello </s> (no_such_audio)\n");
  const RunResult run = Gmmscore(Args(transcripts, "ctm:-"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("utterance 'sense_and_sensibility_01_austen_64kb-0930': \"himselfz\" (word 8) is "
                                 "not in the dictionary"));
  EXPECT_THAT(run.err, HasSubstr("utterance 'sense_and_sensibility_01_austen_64kb-0890': the transcript has no words"));
  EXPECT_THAT(run.err, HasSubstr("utterance 'no_such_audio': no features or audio for it"));
  EXPECT_THAT(run.err, HasSubstr("aligned 1 of 4 utterances"));
  EXPECT_THAT(run.out, HasSubstr("sense_and_sensibility_01_austen_64kb-0880 1 "));
  EXPECT_THAT(run.out, HasSubstr(" man\n"));
}

TEST(BwCliTest, ReestimatesAn4OnCardsAndReportsBadUtterances) {
  const std::string an4 = "/usr/share/pocketsphinx/test/data/an4_ci_cont";
  const std::string cards = "/usr/share/pocketsphinx/test/data/cards";
  struct stat info;
  if (::stat(an4.c_str(), &info) != 0 || ::stat(cards.c_str(), &info) != 0) GTEST_SKIP() << "pocketsphinx data missing";
  const std::string scp = Temp("wav.scp"), transcripts = Temp("transcripts"), out = Temp("an4_bw");
  WriteFile(scp, absl::StrCat("001 ", cards, "/001.wav\n002 ", cards, "/002.wav\n003 ", cards, "/003.wav\n"));
  WriteFile(transcripts, "<s> ten of clubs </s> (001)\n<s> four queen of clubs </s> (002)\n"
                         "<s> seven of clubz </s> (003)\n<s> five five </s> (004)\n");
  const RunResult run = Gmmscore({"bw", "--model", an4, "--dict", kDict, "--transcripts", transcripts, "--audio", scp,
                                  "--iterations", "2", "--output-dir", out, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("iteration 2/2: log-likelihood"));
  EXPECT_THAT(run.err, HasSubstr("of 2 utterances"));
  EXPECT_THAT(run.err, HasSubstr("utterance '003': \"clubz\" (word 3) is not in the dictionary"));
  EXPECT_THAT(run.err, HasSubstr("utterance '004': no features or audio for it"));
  for (const char* file : {"means", "variances", "mixture_weights", "transition_matrices", "mdef", "feat.params"}) {
    EXPECT_EQ(::stat(absl::StrCat(out, "/", file).c_str(), &info), 0) << file;
  }
  ExpectOneLineError(Gmmscore({"bw", "--model", an4, "--dict", kDict, "--transcripts", transcripts, "--audio", scp,
                               "--output-dir", out, "--update_flags", "mq"}),
                     2, "q");
}

TEST_F(AlignCliTest, UsageErrors) {
  std::vector<std::string> both = Args(kLibrivox + "/transcription", "ctm:-");
  both.insert(both.end(), {"--features", "ark:/dev/null"});
  ExpectOneLineError(Gmmscore(both), 2, "exactly one of --features");
  ExpectOneLineError(Gmmscore(Args(kLibrivox + "/transcription", "words.ctm")), 2, "--output must be ctm:FILE");
  ExpectOneLineError(Gmmscore({"align", "--model", kModel}), 2, "--dict");
}

}  // namespace
}  // namespace gmmscore
