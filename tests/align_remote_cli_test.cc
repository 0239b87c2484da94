// `gmmscore align --server` (the built binary) against an in-process
// gmmscored serving pocketsphinx's en-us with cmudict: the same word and
// phone CTMs as the offline `gmmscore align`, from audio and from
// features; an error line per utterance that cannot be aligned; the
// offline-only flags refused.
#include "absl/strings/str_cat.h"
#include "client/cli/cli_test_util.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "tests/align_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

class AlignRemoteCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveAlignData()) GTEST_SKIP() << "pocketsphinx en-us or its test data is missing: run tools/install_deps.sh";
    daemon_ = repository_.StartDaemon({});
    ASSERT_NE(daemon_, nullptr);
    std::string scp;
    for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
      const std::string utt = absl::StrCat("sense_and_sensibility_01_austen_64kb-", id);
      absl::StrAppend(&scp, utt, " ", kLibrivox, "/", utt, ".wav\n");
    }
    scp_ = Temp("wav.scp");
    WriteFile(scp_, scp);
  }

  // The offline command's CTM of the librivox audio.
  std::string Offline(bool phones) {
    std::vector<std::string> args = {"align", "--model", kEnUsModel, "--dict", kEnUsDict, "--transcripts",
                                     kLibrivox + "/transcription", "--audio", scp_, "--output", "ctm:-",
                                     "--backend", TestBackendName()};
    if (phones) args.push_back("--phones");
    const RunResult run = Gmmscore(args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  }

  std::vector<std::string> Remote(const std::string& input_flag, const std::string& input,
                                  const std::string& transcripts) {
    return {"align", "--server", daemon_->address(), "--model", "en-us", "--transcripts", transcripts,
            input_flag, input, "--output", "ctm:-", "--requests_in_flight", "3"};
  }

  AlignRepository repository_;
  std::unique_ptr<Daemon> daemon_;
  std::string scp_;
};

TEST_F(AlignRemoteCliTest, AudioGivesTheOfflineWordAndPhoneCtm) {
  for (bool phones : {false, true}) {
    SCOPED_TRACE(phones ? "phones" : "words");
    std::vector<std::string> args = Remote("--audio", scp_, kLibrivox + "/transcription");
    if (phones) args.push_back("--phones");
    const RunResult run = Gmmscore(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.err, HasSubstr("aligned 5 of 5 utterances, 24.7 s of speech"));
    EXPECT_EQ(run.out, Offline(phones));
    EXPECT_THAT(run.out, HasSubstr("sense_and_sensibility_01_austen_64kb-0880 1 "));
  }
  EXPECT_EQ(daemon_->align_stats().aligned, 10);
}

TEST_F(AlignRemoteCliTest, FeaturesGiveTheSameCtmAsAudio) {
  std::vector<KaldiMatrixEntry> entries;
  for (Utterance& u : LoadLibrivox()) entries.push_back({u.id, std::move(u.features)});
  const std::string ark = Temp("feats.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive("ark:" + ark, entries).ok());
  const RunResult run = Gmmscore(Remote("--features", "ark:" + ark, kLibrivox + "/transcription"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, Offline(false));
}

TEST_F(AlignRemoteCliTest, EachBadUtteranceGetsAnErrorLineAndTheRestAlign) {
  const std::string transcripts = Temp("transcripts");
  WriteFile(transcripts,
            "<s> he was not an ill disposed young man </s> (sense_and_sensibility_01_austen_64kb-0880)\n"
            "<s> he might even have been made amiable himselfz </s> (sense_and_sensibility_01_austen_64kb-0930)\n"
            "<s> </s> (sense_and_sensibility_01_austen_64kb-0890)\n"
            "<s> hello </s> (no_such_audio)\n");
  const RunResult run = Gmmscore(Remote("--audio", scp_, transcripts));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("utterance 'sense_and_sensibility_01_austen_64kb-0930': \"himselfz\" (word 8) is "
                                 "not in the model's dictionary"));
  EXPECT_THAT(run.err, HasSubstr("utterance 'sense_and_sensibility_01_austen_64kb-0890': the transcript has no words"));
  EXPECT_THAT(run.err, HasSubstr("utterance 'no_such_audio': no features or audio for it"));
  EXPECT_THAT(run.err, HasSubstr("aligned 1 of 4 utterances"));
  EXPECT_THAT(run.out, HasSubstr("sense_and_sensibility_01_austen_64kb-0880 1 "));
  EXPECT_THAT(run.out, HasSubstr(" man\n"));
}

TEST_F(AlignRemoteCliTest, OfflineOnlyFlagsAndUnknownModelsAreRefused) {
  std::vector<std::string> with_dict = Remote("--audio", scp_, kLibrivox + "/transcription");
  with_dict.insert(with_dict.end(), {"--dict", kEnUsDict});
  ExpectOneLineError(Gmmscore(with_dict), 2, "--dict is for the offline align");
  std::vector<std::string> with_frames = Remote("--audio", scp_, kLibrivox + "/transcription");
  with_frames.insert(with_frames.end(), {"--frames", "ark,t:-"});
  ExpectOneLineError(Gmmscore(with_frames), 2, "--frames is for the offline align");

  std::vector<std::string> nodict = Remote("--audio", scp_, kLibrivox + "/transcription");
  nodict[4] = "en-us-nodict";
  const RunResult run = Gmmscore(nodict);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("model 'en-us-nodict' cannot align"));
}

}  // namespace
}  // namespace gmmscore
