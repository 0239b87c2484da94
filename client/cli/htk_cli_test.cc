// HTK parameter files as features, end to end: `gmmscore score` and
// `gmmscore stream` (against an in-process daemon) given --features
// htk:SCRIPT write exactly what they write for the same features as ark:.
// Inputs are fresh each run; GMMSCORE_TEST_SEED=N repeats one.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/cli_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/model_loader.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

uint64_t FreshSeed() {
  if (const char* fixed = std::getenv("GMMSCORE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device()() * 2654435761ull + std::random_device()();
}

FloatMatrix Rows(const FloatMatrix& m, int64_t first, int64_t last) {
  FloatMatrix out(last - first + 1, m.cols());
  for (int64_t t = first; t <= last; ++t) {
    for (int64_t d = 0; d < m.cols(); ++d) out.at(t - first, d) = m.at(t, d);
  }
  return out;
}

struct HtkInputs {
  std::string htk_rspecifier;              // "htk:SCRIPT"
  std::string ark_rspecifier;              // the same utterances as a Kaldi archive
  std::vector<KaldiMatrixEntry> features;  // what both hold
};

// Writes `utterances` as HTK files in the forms tools meet (big- and
// little-endian, compressed, _K), an HTK script of them with a logical name
// and a frame range, and the archive of what that script holds.
HtkInputs WriteHtkInputs(const std::vector<KaldiMatrixEntry>& utterances) {
  const std::vector<HtkEncodeOptions> forms = {{.parameter_kind = 6},
                                               {.parameter_kind = 6, .little_endian = true},
                                               {.parameter_kind = 6, .compressed = true},
                                               {.parameter_kind = 6 | 010000}};
  std::filesystem::create_directories(Temp("mfc"));
  std::string script;
  std::vector<KaldiMatrixEntry> expected;
  for (size_t u = 0; u < utterances.size(); ++u) {
    const HtkEncodeOptions& form = forms[u % forms.size()];
    const std::string path = absl::StrCat(Temp("mfc"), "/", utterances[u].key, ".mfc");
    std::string bytes = EncodeHtkParameterFile(utterances[u].matrix.view(), form);
    if (form.parameter_kind & 010000) bytes += std::string("\x5a\xa5", 2);  // _K: a CRC, not checked
    WriteFile(path, bytes);
    absl::StatusOr<HtkFeatures> decoded = ReadHtkParameterFile(path);  // compressed: what the file holds
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    if (!form.compressed) EXPECT_EQ(decoded->frames, utterances[u].matrix);
    absl::StrAppend(&script, "  ", path, "\n\n");
    expected.push_back({utterances[u].key, decoded->frames});
  }
  // HTK's extended names: frames 2..6 of the first utterance as "seg".
  absl::StrAppend(&script, "seg=", Temp("mfc"), "/", utterances[0].key, ".mfc[2,6]\n");
  expected.push_back({"seg", Rows(expected[0].matrix, 2, 6)});
  const std::string list = Temp("list.scp"), ark = Temp("feats.ark");
  WriteFile(list, script);
  EXPECT_TRUE(WriteKaldiMatrixArchive("ark:" + ark, expected).ok());
  return {"htk:" + list, "ark:" + ark, expected};
}

TEST(HtkCliTest, ScoreReadsHtkScriptsAsItReadsArchives) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const std::string model_path = Temp("model.gmm");
  RunResult run = Gmmscore({"synth", "--states=25", "--min_gaussians=1", "--max_gaussians=6", "--dim=39",
                            absl::StrCat("--seed=", seed % 1000000), "--output", model_path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<DiagGmmModel> model = LoadModel(model_path);
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937_64 random(seed);
  std::vector<KaldiMatrixEntry> utterances;
  for (int u = 0; u < 5; ++u) {
    const int frames = u == 3 ? 1 : 8 + static_cast<int>(random() % 60);
    utterances.push_back({absl::StrCat("utt", u), TestFeatures(*model, frames, random())});
  }
  const HtkInputs inputs = WriteHtkInputs(utterances);

  std::vector<std::string> outputs;
  for (const std::string& features : {inputs.htk_rspecifier, inputs.ark_rspecifier}) {
    const std::string out = Temp(absl::StrCat("scores", outputs.size(), ".ark"));
    run = Gmmscore({"score", "--model", model_path, "--features", features, "--output", "ark:" + out, "--backend=cpu"});
    ASSERT_EQ(run.exit_code, 0) << features << ": " << run.err;
    EXPECT_THAT(run.err, HasSubstr("scored 6 utterances"));
    outputs.push_back(ReadFile(out));
  }
  EXPECT_FALSE(outputs[0].empty());
  EXPECT_TRUE(outputs[0] == outputs[1]) << "the two score archives differ";  // byte for byte
  absl::StatusOr<std::vector<KaldiMatrixEntry>> scores = ReadKaldiMatrixArchive("ark:" + Temp("scores0.ark"));
  ASSERT_TRUE(scores.ok()) << scores.status();
  ASSERT_EQ(scores->size(), 6u);
  EXPECT_EQ((*scores)[5].key, "seg");
  EXPECT_EQ((*scores)[5].matrix.rows(), 5);

  // Errors: a missing script is a runtime error, a specifier without a file
  // a usage error, each one line.
  ExpectOneLineError(Gmmscore({"score", "--model", model_path, "--features", "htk:" + Temp("missing.scp"), "--output",
                               "ark:" + Temp("x.ark")}),
                     1, "missing.scp");
  ExpectOneLineError(
      Gmmscore({"score", "--model", model_path, "--features", "htk:", "--output", "ark:" + Temp("x.ark")}), 2,
      "no file name");
  WriteFile(Temp("dup.scp"), absl::StrCat("a=", Temp("mfc"), "/utt0.mfc\na=", Temp("mfc"), "/utt1.mfc\n"));
  ExpectOneLineError(Gmmscore({"score", "--model", model_path, "--features", "htk:" + Temp("dup.scp"), "--output",
                               "ark:" + Temp("x.ark")}),
                     1, "line 2: key 'a' again");
}

TEST(HtkCliTest, StreamReadsHtkScriptsAsItReadsArchives) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::unique_ptr<TestDaemon> daemon = TestDaemon::Start(
      {{"spk_a", {.num_states = 30, .min_gaussians = 2, .max_gaussians = 5, .dim = 13, .seed = seed % 1000}}});
  ASSERT_NE(daemon, nullptr);
  std::mt19937_64 random(seed);
  std::vector<KaldiMatrixEntry> utterances;
  for (int u = 0; u < 4; ++u) {
    utterances.push_back(
        {absl::StrCat("s", u), TestFeatures(daemon->model("spk_a"), 10 + static_cast<int>(random() % 50), random())});
  }
  const HtkInputs inputs = WriteHtkInputs(utterances);
  std::vector<std::string> outputs;
  for (const std::string& features : {inputs.htk_rspecifier, inputs.ark_rspecifier}) {
    const std::string out = Temp(absl::StrCat("stream", outputs.size(), ".ark"));
    const RunResult run = Gmmscore({"stream", "--server=" + daemon->address(), "--model=spk_a", "--chunk_frames=7",
                                    "--nosummary", "--features=" + features, "--output=ark:" + out});
    ASSERT_EQ(run.exit_code, 0) << features << ": " << run.err;
    outputs.push_back(ReadFile(out));
  }
  // The server's scores of the same frames may differ in the last bits from
  // run to run (how it batches them), so the two are compared to the
  // engine's float32 allowance (tests/test_daemon.h), key by key.
  absl::StatusOr<std::vector<KaldiMatrixEntry>> via_htk = ReadKaldiMatrixArchive("ark:" + Temp("stream0.ark"));
  absl::StatusOr<std::vector<KaldiMatrixEntry>> via_ark = ReadKaldiMatrixArchive("ark:" + Temp("stream1.ark"));
  ASSERT_TRUE(via_htk.ok() && via_ark.ok()) << via_htk.status() << via_ark.status();
  ASSERT_EQ(via_htk->size(), inputs.features.size());
  ASSERT_EQ(via_ark->size(), inputs.features.size());
  EXPECT_EQ((*via_htk)[4].key, "seg");
  for (size_t u = 0; u < inputs.features.size(); ++u) {
    SCOPED_TRACE(inputs.features[u].key);
    const FloatMatrix& a = (*via_htk)[u].matrix;
    const FloatMatrix& b = (*via_ark)[u].matrix;
    EXPECT_EQ((*via_htk)[u].key, inputs.features[u].key);
    EXPECT_EQ((*via_ark)[u].key, inputs.features[u].key);
    ASSERT_EQ(a.rows(), inputs.features[u].matrix.rows());
    ASSERT_EQ(a.rows(), b.rows());
    ASSERT_EQ(a.cols(), b.cols());
    const FloatMatrix allowance = ScoreAllowance(daemon->model("spk_a"), inputs.features[u].matrix.view());
    for (int64_t i = 0; i < a.rows() * a.cols(); ++i) {
      ASSERT_NEAR(a.data()[i], b.data()[i], 2 * allowance.data()[i]);  // each within one of the truth
    }
  }
}

}  // namespace
}  // namespace gmmscore
