// The gmmscore binary on audio in (features) and speaker transforms
// (score --fmllr), end to end.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
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
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/wav_reader.h"
#include "kernels/score/feature_transform.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kTestData = "/usr/share/pocketsphinx/test/data";
const std::string kEnUs = "/usr/share/pocketsphinx/model/en-us/en-us";

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

#define REQUIRE_PATH(path) \
  if (!Exists(path)) GTEST_SKIP() << path << " is missing: run tools/install_deps.sh"

std::string Fixture(absl::string_view name) { return absl::StrCat(GMMSCORE_IO_TESTDATA, "/", name); }

std::vector<KaldiMatrixEntry> ReadArchive(const std::string& rspecifier) {
  absl::StatusOr<std::vector<KaldiMatrixEntry>> entries = ReadKaldiMatrixArchive(rspecifier);
  EXPECT_TRUE(entries.ok()) << entries.status();
  return entries.ok() ? *std::move(entries) : std::vector<KaldiMatrixEntry>{};
}

TEST(FeaturesCliTest, RawAndWavGiveTheLibrarysFeatures) {
  REQUIRE_PATH(kEnUs);
  REQUIRE_PATH(kTestData + "/goforward.raw");
  // The same samples as a WAV file, under another name.
  absl::StatusOr<PcmAudio> audio = ReadSpeechFile(kTestData + "/goforward.raw", 16000);
  ASSERT_TRUE(audio.ok());
  const std::string wav = Temp("again.wav");
  WriteFile(wav, EncodeWav(*audio));

  const std::string out = Temp("feats.ark");
  RunResult run = Gmmscore({"features", "--input", absl::StrCat(kTestData, "/goforward.raw,", wav), "--model", kEnUs,
                            "--output", absl::StrCat("ark:", out)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("wrote 2 utterances, 556 frames of 1s_c_d_dd"));
  const std::vector<KaldiMatrixEntry> entries = ReadArchive(absl::StrCat("ark:", out));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key, "goforward");
  EXPECT_EQ(entries[1].key, std::filesystem::path(wav).stem().string());
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(kEnUs);
  ASSERT_TRUE(pipeline.ok());
  absl::StatusOr<FloatMatrix> expected = ComputeFeatures(*audio, *pipeline, "goforward.raw");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(entries[0].matrix, *expected);  // binary archive: float32 exact
  EXPECT_EQ(entries[1].matrix, *expected);

  // --remove_silence: the frames of the testdata's own goforward.mfc.
  run = Gmmscore({"features", "--input", wav, "--model", kEnUs, "--remove_silence", "--output",
                  absl::StrCat("ark,t:", out)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<KaldiMatrixEntry> voiced = ReadArchive(absl::StrCat("ark:", out));
  ASSERT_EQ(voiced.size(), 1u);
  EXPECT_EQ(voiced[0].matrix.rows(), 264);
  EXPECT_EQ(voiced[0].matrix.cols(), 39);
}

TEST(FeaturesCliTest, WavScpInArkScpOutAndScpInputGiveTheArchivesScores) {
  // Kaldi's pattern: wav.scp in, features written as ark,scp, later
  // commands read scp:.
  REQUIRE_PATH(kEnUs);
  const std::string ark = Temp("feats.ark"), scp = Temp("feats.scp");
  // The input as Kaldi's wav.scp too: keys from the scp, in its order.
  const std::string wav_scp = Temp("wav.scp");
  std::ofstream(wav_scp) << "goforward " << kTestData << "/goforward.raw\n"
                         << "sense_and_sensibility_01_austen_64kb-0870 " << kTestData
                         << "/librivox/sense_and_sensibility_01_austen_64kb-0870.wav\n";
  RunResult run = Gmmscore({"features", "--input", "scp:" + wav_scp, "--model", kEnUs, "--cmn", "live",
                            "--output", absl::StrCat("ark,scp:", ark, ",", scp)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string by_files = Temp("by_files.ark");
  run = Gmmscore({"features", "--input", kTestData + "/goforward.raw," + kTestData + "/librivox/"
                  "sense_and_sensibility_01_austen_64kb-0870.wav", "--model", kEnUs, "--cmn", "live",
                  "--output", "ark:" + by_files});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(ReadFile(by_files), ReadFile(ark));  // same keys, order and features
  std::ifstream lines(scp);
  std::string key, location;
  std::vector<std::string> keys;
  while (lines >> key >> location) {
    keys.push_back(key);
    EXPECT_EQ(location.rfind(ark + ":", 0), 0u) << location;  // ARCHIVE:OFFSET
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"goforward", "sense_and_sensibility_01_austen_64kb-0870"}));
  const std::string from_ark = Temp("from_ark.txt"), from_scp = Temp("from_scp.txt");
  run = Gmmscore({"score", "--model", kEnUs, "--features", "ark:" + ark, "--output", "ark,t:" + from_ark,
                  "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = Gmmscore({"score", "--model", kEnUs, "--features", "scp:" + scp, "--output", "ark,t:" + from_scp,
                  "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GT(ReadFile(from_scp).size(), 1000u);
  EXPECT_EQ(ReadFile(from_scp), ReadFile(from_ark));
}

TEST(FeaturesCliTest, FeatParamsFileInsteadOfModel) {
  REQUIRE_PATH(kTestData + "/goforward.raw");
  const std::string params = Temp("feat.params");
  WriteFile(params, "-nfilt 25\n-feat 1s_c_d\n-cmn none\n");
  const std::string out = Temp("feats.ark");
  RunResult run = Gmmscore({"features", "--input", kTestData + "/goforward.raw", "--feat_params", params,
                            "--output", absl::StrCat("ark:", out)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<KaldiMatrixEntry> entries = ReadArchive(absl::StrCat("ark:", out));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].matrix.cols(), 26);

  WriteFile(params, "-nfft 300\n");
  std::remove(out.c_str());
  run = Gmmscore({"features", "--input", kTestData + "/goforward.raw", "--feat_params", params, "--output",
                  absl::StrCat("ark:", out)});
  ExpectOneLineError(run, 1, "-nfft");
  EXPECT_THAT(run.err, HasSubstr(params));
  EXPECT_FALSE(Exists(out));
}

TEST(FeaturesCliTest, DamagedAudioIsOneLineErrorAndNoOutput) {
  REQUIRE_PATH(kEnUs);
  std::string wav = EncodeWav(PcmAudio{16000, std::vector<int16_t>(3200, 7)});
  const std::string cut = Temp("cut.wav");
  WriteFile(cut, wav.substr(0, wav.size() - 100));
  const std::string out = Temp("feats.ark");
  RunResult run = Gmmscore({"features", "--input", cut, "--model", kEnUs, "--output", absl::StrCat("ark:", out)});
  ExpectOneLineError(run, 1, cut);
  EXPECT_THAT(run.err, HasSubstr("truncated"));
  EXPECT_FALSE(Exists(out));

  const std::string stereo = Temp("stereo.wav");
  wav[22] = 2;
  WriteFile(stereo, wav);
  ExpectOneLineError(Gmmscore({"features", "--input", stereo, "--model", kEnUs, "--output", absl::StrCat("ark:", out)}),
                     1, "2 channel");

  const std::string narrow = Temp("narrow.wav");
  WriteFile(narrow, EncodeWav(PcmAudio{8000, std::vector<int16_t>(800, 7)}));
  ExpectOneLineError(Gmmscore({"features", "--input", narrow, "--model", kEnUs, "--output", absl::StrCat("ark:", out)}),
                     1, "8000 Hz");
}

TEST(FeaturesCliTest, UsageErrors) {
  const std::string out = absl::StrCat("ark:", Temp("feats.ark"));
  ExpectOneLineError(Gmmscore({"features", "--model", kEnUs, "--output", out}), 2, "--input");
  ExpectOneLineError(Gmmscore({"features", "--input", "a.wav", "--output", out}), 2, "--model");
  ExpectOneLineError(Gmmscore({"features", "--input", "a.wav", "--model", kEnUs, "--feat_params", "f", "--output", out}),
                     2, "exactly one");
  ExpectOneLineError(Gmmscore({"features", "--input", "a.wav", "--model", Fixture("tiny_am.txt"), "--output", out}), 2,
                     "not a Sphinx model directory");
  ExpectOneLineError(Gmmscore({"features", "--input", "x/a.wav,y/a.raw", "--model", kEnUs, "--output", out}), 2,
                     "'a'");
}

// --- score --fmllr -----------------------------------------------------------

FloatMatrix Shift3() {
  // [A | b] for the fixture's 3-dim features.
  FloatMatrix m(3, 4);
  const float values[] = {1.1f, 0.2f, 0.0f, 0.5f, -0.1f, 0.9f, 0.3f, -0.25f, 0.0f, 0.05f, 1.2f, 1.0f};
  std::copy(values, values + 12, m.data());
  return m;
}

TEST(ScoreFmllrCliTest, TransformedScoresEqualScoresOfTransformedFeatures) {
  const FloatMatrix m = Shift3();
  // What the transform should produce, scored without --fmllr.
  absl::StatusOr<std::vector<KaldiMatrixEntry>> feats = ReadKaldiMatrixArchive(absl::StrCat("ark:", Fixture("tiny_feats.txt")));
  ASSERT_TRUE(feats.ok());
  absl::StatusOr<FeatureTransform> transform = FeatureTransform::Create(3, 4, m.span());
  ASSERT_TRUE(transform.ok());
  std::vector<KaldiMatrixEntry> moved;
  std::vector<KaldiMatrixEntry> per_utterance;
  for (const KaldiMatrixEntry& entry : *feats) {
    FloatMatrix y;
    ASSERT_TRUE(transform->Apply(entry.matrix.view(), &y).ok());
    moved.push_back({entry.key, y});
    per_utterance.push_back({entry.key, m});
  }
  const std::string moved_ark = Temp("moved.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", moved_ark), moved).ok());
  const std::string want = Temp("want.ark");
  ASSERT_EQ(Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features", absl::StrCat("ark:", moved_ark),
                      "--output", absl::StrCat("ark:", want), "--backend=cpu"}).exit_code, 0);

  // One matrix file (text) for every utterance, and a binary table by key.
  std::string single;
  ASSERT_TRUE(AppendKaldiMatrixEntry("k", m.view(), /*text=*/true, &single).ok());
  const std::string mat = Temp("trans.mat");
  WriteFile(mat, single.substr(2));
  const std::string table = Temp("trans.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", table), per_utterance).ok());
  const std::string unmoved = Temp("unmoved.ark");
  ASSERT_EQ(Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features", absl::StrCat("ark:", Fixture("tiny_feats.txt")),
                      "--output", absl::StrCat("ark:", unmoved), "--backend=cpu"}).exit_code, 0);
  for (const std::string& spec : {mat, absl::StrCat("ark:", table)}) {
    const std::string got = Temp("got.ark");
    RunResult run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                              absl::StrCat("ark:", Fixture("tiny_feats.txt")), "--output", absl::StrCat("ark:", got),
                              "--backend=cpu", "--fmllr", spec});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(ReadFile(got), ReadFile(want)) << spec;
    EXPECT_NE(ReadFile(got), ReadFile(unmoved)) << spec;  // the transform did something
  }
}

TEST(ScoreFmllrCliTest, WrongShapeOrMissingKeyNamesTheFile) {
  FloatMatrix wide(3, 5, 0.5f);
  const std::string table = Temp("wide.ark");
  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", table), {{"utt1", wide}}).ok());
  const std::string out = Temp("out.ark");
  RunResult run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features",
                            absl::StrCat("ark:", Fixture("tiny_feats.txt")), "--output", absl::StrCat("ark:", out),
                            "--backend=cpu", "--fmllr", absl::StrCat("ark:", table)});
  ExpectOneLineError(run, 1, table);
  EXPECT_THAT(run.err, HasSubstr("3 x 5"));

  ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", table), {{"utt1", Shift3()}}).ok());
  run = Gmmscore({"score", "--model", Fixture("tiny_am.txt"), "--features", absl::StrCat("ark:", Fixture("tiny_feats.txt")),
                  "--output", absl::StrCat("ark:", out), "--backend=cpu", "--fmllr", absl::StrCat("ark:", table)});
  ExpectOneLineError(run, 1, "no fMLLR transform for utterance 'utt2'");
  EXPECT_FALSE(Exists(out));
}

}  // namespace
}  // namespace gmmscore
