// Runs the gmmscore binary end to end on the kernels/io fixtures.
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "client/cli/cli_test_util.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/model_loader.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string Fixture(absl::string_view name) { return absl::StrCat(GMMSCORE_IO_TESTDATA, "/", name); }

// Checks an output archive against the float64 reference for the fixture.
void ExpectMatchesReference(const std::string& rspecifier) {
  absl::StatusOr<DiagGmmModel> model = LoadModel(Fixture("tiny_am.txt"));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::vector<KaldiMatrixEntry>> features =
      ReadKaldiMatrixArchive(absl::StrCat("ark:", Fixture("tiny_feats.txt")));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> scores = ReadKaldiMatrixArchive(rspecifier);
  ASSERT_TRUE(features.ok() && scores.ok()) << scores.status();
  ASSERT_EQ(scores->size(), features->size());
  for (size_t i = 0; i < features->size(); ++i) {
    const KaldiMatrixEntry& feats = (*features)[i];
    const KaldiMatrixEntry& loglikes = (*scores)[i];
    EXPECT_EQ(loglikes.key, feats.key);
    ASSERT_EQ(loglikes.matrix.rows(), feats.matrix.rows());
    ASSERT_EQ(loglikes.matrix.cols(), model->num_states());
    const std::vector<double> reference = ReferenceLogLikelihoods(*model, feats.matrix.view());
    EXPECT_LE(MaxAbsError(loglikes.matrix, reference), 1e-4) << feats.key;
  }
}

TEST(GmmscoreCliTest, ScoresKaldiModelAndArchiveLikeTheReference) {
  const std::string text_out = Temp("loglikes.txt");
  RunResult run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                      absl::StrCat("ark:", Fixture("tiny_feats.txt")), "--output",
                      absl::StrCat("ark,t:", text_out), "--backend=cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("scored 2 utterances, 6 frames"));
  EXPECT_THAT(ReadFile(text_out), StartsWith("utt1  [\n  "));
  ExpectMatchesReference(absl::StrCat("ark:", text_out));

  const std::string binary_out = Temp("loglikes.ark");
  run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                  absl::StrCat("ark,t:", Fixture("tiny_feats.txt")), "--output",
                  absl::StrCat("ark:", binary_out), "--algo", "auto"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ReadFile(binary_out).substr(0, 7), std::string("utt1 \0B", 7));
  ExpectMatchesReference(absl::StrCat("ark:", binary_out));
}

TEST(GmmscoreCliTest, NativeModelAndPipesGiveTheSameScores) {
  const std::string native = Temp("tiny.gmm");
  RunResult run = Gmmscore({"convert", "--model", Fixture("tiny_am.txt"), "--output", native});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = Gmmscore({"score", "--model", native, "--features", "ark:-", "--output", "ark,t:-",
                  "--backend", "cpu"},
                 Fixture("tiny_feats.txt"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string piped = Temp("piped.txt");
  WriteFile(piped, run.out);
  ExpectMatchesReference(absl::StrCat("ark:", piped));
}

TEST(GmmscoreCliTest, SynthConvertAndInfo) {
  const std::string synth = Temp("synth.gmm");
  RunResult run = Gmmscore({"synth", "--states=40", "--min_gaussians=1", "--max_gaussians=6", "--dim=13",
                      "--seed=4", "--output", synth});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = Gmmscore({"info", "--model", synth});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("format      native"));
  EXPECT_THAT(run.out, HasSubstr("states      40"));
  EXPECT_THAT(run.out, HasSubstr("dimension   13"));
  EXPECT_THAT(run.out, HasSubstr("gaussians   "));
  EXPECT_THAT(run.out, HasSubstr("centre      min "));

  const std::string kaldi = Temp("synth.mdl.txt");
  run = Gmmscore({"convert", "--model", synth, "--output", kaldi, "--format=kaldi-text"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(ReadFile(kaldi), StartsWith("<DIMENSION> 13 <NUMPDFS> 40 <DiagGMM> \n"));
  run = Gmmscore({"info", "--model", kaldi});
  EXPECT_THAT(run.out, HasSubstr("format      kaldi-text"));
  EXPECT_THAT(run.out, HasSubstr("states      40"));
}

TEST(GmmscoreCliTest, Help) {
  RunResult run = Gmmscore({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* command : {"score", "convert", "synth", "info"}) EXPECT_THAT(run.out, HasSubstr(command));
  run = Gmmscore({"help", "score"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, HasSubstr("--features"));
  EXPECT_THAT(run.out, HasSubstr("(default: auto)"));
  EXPECT_EQ(Gmmscore({"synth", "--help"}).out, Gmmscore({"help", "synth"}).out);
  // --model is a file offline and a served model's name for `stream`.
  EXPECT_THAT(run.out, HasSubstr("model file: a gmmscore native model"));
  run = Gmmscore({"help", "stream"});
  EXPECT_THAT(run.out, HasSubstr("models the server serves"));
  EXPECT_THAT(run.out, Not(HasSubstr("model file:")));
}

TEST(GmmscoreCliTest, RuntimeErrorsExitOneWithOneLine) {
  const std::string feats = absl::StrCat("ark:", Fixture("tiny_feats.txt"));
  const std::string out_path = Temp("out.ark");
  const std::string out = absl::StrCat("ark:", out_path);

  ExpectOneLineError(Gmmscore({"score", "--model", Temp("missing.gmm"), "--features", feats, "--output", out}),
                     1, "missing.gmm");
  ExpectOneLineError(Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                               absl::StrCat("ark:", Temp("nofeats.ark")), "--output", out}),
                     1, "nofeats.ark");

  const std::string synth = Temp("dim13.gmm");
  ASSERT_EQ(Gmmscore({"synth", "--states=3", "--gaussians=2", "--dim=13", "--output", synth}).exit_code, 0);
  ExpectOneLineError(Gmmscore({"score", "--model", synth, "--features", feats, "--output", out}), 1,
                     "utterance 'utt1'");
  EXPECT_THAT(Gmmscore({"score", "--model", synth, "--features", feats, "--output", out}).err,
              HasSubstr("dimension 3 but model"));

  // NaN in the second utterance: the first is scored, then the run fails and
  // leaves no partial archive behind.
  const std::string nan_feats = Temp("nan.txt");
  WriteFile(nan_feats, absl::StrReplaceAll(ReadFile(Fixture("tiny_feats.txt")), {{"2.5 -1", "2.5 nan"}}));
  const RunResult nan_run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                                absl::StrCat("ark:", nan_feats), "--output", out});
  ExpectOneLineError(nan_run, 1, "utterance 'utt2'");
  EXPECT_THAT(nan_run.err, HasSubstr("must be finite"));
  EXPECT_FALSE(std::ifstream(out_path).good());

  const std::string cut_feats = Temp("cut.txt");
  WriteFile(cut_feats, ReadFile(Fixture("tiny_feats.txt")).substr(0, 70));
  ExpectOneLineError(Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                               absl::StrCat("ark:", cut_feats), "--output", out}),
                     1, "truncated");

  const std::string bad_model = Temp("bad.mdl");
  WriteFile(bad_model, absl::StrReplaceAll(ReadFile(Fixture("tiny_am.txt")), {{"[ 0.25 0.75 ]", "[ 0.25 0.5 ]"}}));
  ExpectOneLineError(Gmmscore({"info", "--model", bad_model}), 1, "pdf 1: weights sum to 0.750000");
}

TEST(GmmscoreCliTest, UsageErrorsExitTwoWithOneLine) {
  const std::string model = Fixture("tiny_am.txt");
  ExpectOneLineError(Gmmscore({}), 2, "no command");
  ExpectOneLineError(Gmmscore({"frobnicate"}), 2, "unknown command 'frobnicate'");
  ExpectOneLineError(Gmmscore({"help", "frobnicate"}), 2, "no command 'frobnicate'");
  ExpectOneLineError(Gmmscore({"info"}), 2, "info needs --model");
  ExpectOneLineError(Gmmscore({"info", "--model"}), 2, "--model needs a value");
  ExpectOneLineError(Gmmscore({"info", "--model", model, "--states=3"}), 2, "unknown flag --states");
  ExpectOneLineError(Gmmscore({"info", model}), 2, "unexpected argument");
  ExpectOneLineError(Gmmscore({"score", "--model", model, "--features", "feats.ark", "--output", "ark:x"}), 2,
                     "expected ark:FILE");
  ExpectOneLineError(Gmmscore({"score", "--model", model, "--features", "ark:f", "--output", "ark:x",
                               "--algo", "fastest"}),
                     2, "unknown algorithm 'fastest'");
  ExpectOneLineError(Gmmscore({"score", "--model", model, "--features", "ark:f", "--output", "ark:x",
                               "--backend", "tpu"}),
                     2, "unknown backend 'tpu'");
  ExpectOneLineError(Gmmscore({"convert", "--model", model, "--output", "x", "--format", "json"}), 2,
                     "unknown --format 'json'");
  ExpectOneLineError(Gmmscore({"synth", "--states=3", "--gaussians=2", "--min_gaussians=1", "--output=x"}), 2,
                     "either --gaussians");
  ExpectOneLineError(Gmmscore({"synth", "--states=three", "--gaussians=2", "--output=x"}), 2,
                     "bad value 'three' for --states");
}

}  // namespace
}  // namespace gmmscore
