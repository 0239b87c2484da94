// `gmmscore stream --audio` (the built binary) against an in-process
// gmmscored serving pocketsphinx's en-us: the log-likelihoods of real
// speech streamed as audio equal `gmmscore score` on the features `gmmscore
// features --cmn live` computes from the same files, at any chunk length.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "client/cli/cli_test_util.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "tests/align_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

std::vector<KaldiMatrixEntry> ReadArchive(const std::string& path) {
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadKaldiMatrixArchive("ark:" + path);
  EXPECT_TRUE(entries.ok()) << entries.status();
  return entries.ok() ? *std::move(entries) : std::vector<KaldiMatrixEntry>{};
}

TEST(AudioRemoteCliTest, StreamedAudioScoresEqualOfflineLiveCmnFeaturesScored) {
  if (!HaveAlignData()) GTEST_SKIP() << "pocketsphinx en-us or its test data is missing: run tools/install_deps.sh";
  AlignRepository repository;
  auto daemon = repository.StartDaemon({});
  ASSERT_NE(daemon, nullptr);
  std::string wavs;
  for (const char* id : {"0870", "0920"}) {
    absl::StrAppend(&wavs, wavs.empty() ? "" : ",", kLibrivox, "/sense_and_sensibility_01_austen_64kb-", id, ".wav");
  }
  const std::string features = Temp("live.ark"), offline = Temp("offline.ark");
  RunResult run = Gmmscore({"features", "--input", wavs, "--model", kEnUsModel, "--cmn", "live", "--output",
                            "ark:" + features});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, ::testing::HasSubstr("live CMN"));
  run = Gmmscore({"score", "--model", kEnUsModel, "--features", "ark:" + features, "--output", "ark:" + offline,
                  "--backend", TestBackendName()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<KaldiMatrixEntry> expected = ReadArchive(offline);
  ASSERT_EQ(expected.size(), 2u);
  for (const char* chunk_ms : {"10", "250", "1000"}) {
    SCOPED_TRACE(absl::StrCat(chunk_ms, " ms chunks"));
    const std::string streamed = Temp(absl::StrCat("streamed", chunk_ms, ".ark"));
    run = Gmmscore({"stream", "--server", daemon->address(), "--model", "en-us", "--audio", wavs,
                    "--audio_chunk_ms", chunk_ms, "--output", "ark:" + streamed, "--nosummary"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::vector<KaldiMatrixEntry> got = ReadArchive(streamed);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t u = 0; u < got.size(); ++u) {
      EXPECT_EQ(got[u].key, expected[u].key);
      ASSERT_EQ(got[u].matrix.rows(), expected[u].matrix.rows());
      ASSERT_EQ(got[u].matrix.cols(), expected[u].matrix.cols());
      double worst = 0;
      for (int64_t i = 0; i < got[u].matrix.rows() * got[u].matrix.cols(); ++i) {
        worst = std::max(worst, std::abs(double{got[u].matrix.data()[i]} - expected[u].matrix.data()[i]));
      }
      EXPECT_LT(worst, 1e-3) << got[u].key;
    }
  }
  // Features and audio together, or neither, are usage errors.
  run = Gmmscore({"stream", "--server", daemon->address(), "--model", "en-us", "--output", "ark:/dev/null"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
}

}  // namespace
}  // namespace gmmscore
