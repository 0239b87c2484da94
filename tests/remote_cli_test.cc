// `gmmscore stream` and `gmmscore models` (the built binary) against an
// in-process daemon, and tools/sphinx_mfc_to_ark.sh on real speech.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <chrono>
#include <thread>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/score/fusion.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  int exit_code = -1;
  std::string err;
  std::string out;
};

std::string Temp(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/remote_cli_test_", getpid(), "_", name);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

RunResult RunProgram(const std::string& program, const std::vector<std::string>& args) {
  const std::string out = Temp("stdout"), err = Temp("stderr");
  std::string command = program;
  for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
  absl::StrAppend(&command, " >", out, " 2>", err);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(err), ReadFile(out)};
}

class RemoteCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = TestDaemon::Start(
        {{"spk_a", {.num_states = 30, .min_gaussians = 2, .max_gaussians = 5, .dim = 9, .seed = 1}},
         {"spk_b", {.num_states = 30, .min_gaussians = 2, .max_gaussians = 5, .dim = 9, .seed = 2}}});
    ASSERT_NE(daemon_, nullptr);
  }
  std::unique_ptr<TestDaemon> daemon_;
};

TEST_F(RemoteCliTest, StreamWritesTheFusedScoresOfEveryUtterance) {
  std::vector<KaldiMatrixEntry> utterances = {
      {"utt1", TestFeatures(daemon_->model("spk_a"), 45, 1)},
      {"utt2", TestFeatures(daemon_->model("spk_b"), 8, 2)}};
  const std::string features = Temp("feats.ark"), output = Temp("out.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive("ark:" + features, utterances).ok());

  RunResult run = RunProgram(GMMSCORE_CLI, {"stream", "--server=" + daemon_->address(),
                                     "--model=spk_a,spk_b", "--fusion=logsumexp",
                                     "--weights=1,3", "--chunk_frames=7",
                                     "--features=ark:" + features, "--output=ark:" + output});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("utt1: 45 frames (0.45 s of audio)"));
  EXPECT_THAT(run.err, HasSubstr("best state per 0.25 s: "));
  EXPECT_THAT(run.err, HasSubstr("dominant model per chunk: "));
  EXPECT_THAT(run.err, HasSubstr("2 utterances, 53 frames (0.53 s of audio)"));
  EXPECT_THAT(run.err, HasSubstr("real-time factor"));

  absl::StatusOr<std::vector<KaldiMatrixEntry>> got = ReadKaldiMatrixArchive("ark:" + output);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  for (size_t u = 0; u < 2; ++u) {
    EXPECT_EQ((*got)[u].key, utterances[u].key);
    const ConstMatrixView frames = utterances[u].matrix.view();
    const FloatMatrix a = daemon_->ScoreOffline("spk_a", frames);
    const FloatMatrix b = daemon_->ScoreOffline("spk_b", frames);
    auto fusion = ModelFusion::Create(2, {.method = FusionMethod::kLogSumExp, .weights = {1, 3}});
    FusedScores expected;
    ASSERT_TRUE(fusion->Fuse({a.view(), b.view()}, &expected).ok());
    const FloatMatrix& fused = (*got)[u].matrix;
    ASSERT_EQ(fused.rows(), frames.rows);
    double allowed = 0.0;
    for (const char* m : {"spk_a", "spk_b"}) {
      const FloatMatrix allowance = ScoreAllowance(daemon_->model(m), frames);
      for (float v : allowance.span()) allowed = std::max<double>(allowed, v);
    }
    for (int64_t i = 0; i < fused.rows() * fused.cols(); ++i) {
      ASSERT_NEAR(fused.data()[i], expected.loglikes.data()[i], allowed);
    }
  }
}

// --adaptation: the server adapts each utterance's stream and publishes its
// updates under the utterance's key; `gmmscore adaptation` fetches the
// transform as a Kaldi matrix.
TEST_F(RemoteCliTest, StreamAdaptsLiveAndAdaptationFetchesTheTransform) {
  std::vector<KaldiMatrixEntry> utterances = {{"utt9", TestFeatures(daemon_->model("spk_a"), 400, 3)}};
  const std::string features = Temp("feats.ark"), output = Temp("out.ark"), trans = Temp("trans.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive("ark:" + features, utterances).ok());
  RunResult run = RunProgram(GMMSCORE_CLI, {"stream", "--server=" + daemon_->address(), "--model=spk_a",
                                            "--chunk_frames=20", "--adaptation=fmllr",
                                            "--adaptation_start_frames=100", "--adaptation_every_frames=100",
                                            "--features=ark:" + features, "--output=ark:" + output});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("utt9: last chunk scored by adaptation v"));
  // Updates are estimated off the scoring path; the stream's closing one,
  // from all 400 frames, is published after it ends: wait for it.
  for (int tries = 0; tries < 500; ++tries) {
    run = RunProgram(GMMSCORE_CLI, {"adaptation", "--server=" + daemon_->address(), "--name=utt9",
                                    "--output=ark:" + trans});
    if (run.exit_code == 0 && run.out.find("from 400 frames") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("utt9: fmllr v"));
  EXPECT_THAT(run.out, HasSubstr("from 400 frames"));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> got = ReadKaldiMatrixArchive("ark:" + trans);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].key, "utt9");
  EXPECT_EQ((*got)[0].matrix.rows(), 9);
  EXPECT_EQ((*got)[0].matrix.cols(), 10);
  // Unknown names and methods are refused with a message.
  run = RunProgram(GMMSCORE_CLI, {"adaptation", "--server=" + daemon_->address(), "--name=nobody"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("no adaptation was published as 'nobody'"));
  run = RunProgram(GMMSCORE_CLI, {"stream", "--server=" + daemon_->address(), "--model=spk_a",
                                  "--adaptation=magic", "--features=ark:" + features,
                                  "--output=ark:" + output});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("unknown --adaptation 'magic'"));
}

TEST_F(RemoteCliTest, StreamReportsServerErrorsAndRemovesThePartialOutput) {
  const std::string features = Temp("feats.ark"), output = Temp("out.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive("ark:" + features,
                                      {{"u", TestFeatures(daemon_->model("spk_a"), 5, 1)}})
                  .ok());
  RunResult run = RunProgram(GMMSCORE_CLI, {"stream", "--server=" + daemon_->address(), "--model=zzz",
                                     "--features=ark:" + features, "--output=ark:" + output});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("utterance 'u': no model named 'zzz'"));
  EXPECT_FALSE(std::ifstream(output).good());
  run = RunProgram(GMMSCORE_CLI, {"stream", "--server=" + daemon_->address(), "--model=spk_a",
                           "--fusion=mean", "--features=ark:" + features,
                           "--output=ark:" + output});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--fusion 'mean' is not max"));
}

TEST_F(RemoteCliTest, ModelsListsWhatTheServerServes) {
  RunResult run = RunProgram(GMMSCORE_CLI, {"models", "--server=" + daemon_->address()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("NAME"));
  EXPECT_THAT(run.out, HasSubstr("spk_a"));
  EXPECT_THAT(run.out, HasSubstr("spk_b"));
}

TEST_F(RemoteCliTest, HealthExitsZeroOnlyWhileServing) {
  RunResult run = RunProgram(GMMSCORE_CLI, {"health", "--server=" + daemon_->address()});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("the server: SERVING"));
  run = RunProgram(GMMSCORE_CLI, {"health", "--server=" + daemon_->address(), "--service=spk_a"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("'spk_a': SERVING"));
  run = RunProgram(GMMSCORE_CLI, {"health", "--server=" + daemon_->address(), "--service=no_such_model"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("'no_such_model': SERVICE_UNKNOWN"));
  // Nothing listening: fails at once, not after the timeout.
  const absl::Time start = absl::Now();
  run = RunProgram(GMMSCORE_CLI, {"health", "--server=127.0.0.1:1", "--health_timeout_s=30"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("the connection failed"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // Draining: NOT_SERVING (while the listener still answers) or gone.
  daemon_->daemon().Drain(absl::ZeroDuration());
  run = RunProgram(GMMSCORE_CLI, {"health", "--server=" + daemon_->address()});
  EXPECT_EQ(run.exit_code, 1) << run.out;
}

TEST(SphinxMfcToArkTest, RealSpeechBecomes39DimFeaturesWithKaldiDeltas) {
  const std::string mfc = "/usr/share/pocketsphinx/test/data/goforward.mfc";
  if (!std::ifstream(mfc).good()) GTEST_SKIP() << "pocketsphinx-testdata is not installed";
  const std::string ark = Temp("goforward.ark");
  RunResult run = RunProgram(GMMSCORE_MFC_TO_ARK, {ark, mfc});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<std::vector<KaldiMatrixEntry>> got = ReadKaldiMatrixArchive("ark,t:" + ark);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  const FloatMatrix& f = (*got)[0].matrix;
  EXPECT_EQ((*got)[0].key, "goforward");
  ASSERT_EQ(f.rows(), 264);  // (13732 - 4) / 4 / 13
  ASSERT_EQ(f.cols(), 39);
  EXPECT_NEAR(f.at(0, 0), 26.7777f, 1e-3);  // c0 of the first frame, little-endian floats
  // Delta and acceleration of frame 100 from the cepstra, as add-deltas does.
  for (int d = 0; d < 13; ++d) {
    double delta = 0.0, accel = 0.0;
    for (int n = -2; n <= 2; ++n) delta += n / 10.0 * f.at(100 + n, d);
    const double w2[9] = {0.04, 0.04, 0.01, -0.04, -0.1, -0.04, 0.01, 0.04, 0.04};
    for (int n = -4; n <= 4; ++n) accel += w2[n + 4] * f.at(100 + n, d);
    EXPECT_NEAR(f.at(100, 13 + d), delta, 1e-4 * (1 + std::abs(delta)));
    EXPECT_NEAR(f.at(100, 26 + d), accel, 1e-4 * (1 + std::abs(accel)));
  }
}

}  // namespace
}  // namespace gmmscore
