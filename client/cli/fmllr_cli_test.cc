// `gmmscore est-fmllr` on real speech: a UBM trained on the librivox
// recordings' features, transforms per utterance and per speaker, and
// `gmmscore score --fmllr ... --utt2spk` scoring the features better with
// them than without; usage and input errors.
#include <sys/stat.h>

#include <map>

#include "client/cli/cli_test_util.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/train/fmllr_linalg.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

const std::string kModel = "/usr/share/pocketsphinx/model/en-us/en-us";
const std::string kLibrivox = "/usr/share/pocketsphinx/test/data/librivox";

// log|det A| of a D x (D+1) transform [A b]: the Jacobian that belongs to
// the likelihood of transformed features (fMLLR's objective has it).
double LogAbsDetA(const FloatMatrix& w) {
  const int d = static_cast<int>(w.rows());
  std::vector<double> a(int64_t{d} * d);
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) a[int64_t{i} * d + j] = w.at(i, j);
  }
  LuFactors lu;
  EXPECT_TRUE(LuFactorize(d, a.data(), &lu));
  return lu.log_abs_det;
}

// Per frame: column 0 of the scores (a one-state model's frame
// log-likelihood), plus log|det A| of the transform each utterance used.
double LogLikelihoodPerFrame(const std::string& scores, const std::map<std::string, FloatMatrix>& transform_of) {
  const auto entries = ReadKaldiMatrixArchive("ark:" + scores);
  EXPECT_TRUE(entries.ok()) << entries.status();
  double total = 0;
  int64_t frames = 0;
  for (const KaldiMatrixEntry& e : *entries) {
    const auto it = transform_of.find(e.key);
    const double jacobian = it == transform_of.end() ? 0.0 : LogAbsDetA(it->second);
    for (int64_t t = 0; t < e.matrix.rows(); ++t) total += e.matrix.at(t, 0) + jacobian;
    frames += e.matrix.rows();
  }
  return total / static_cast<double>(frames);
}

TEST(FmllrCliTest, TransformsPerUtteranceAndSpeakerRaiseTheLikelihood) {
  struct stat info;
  if (::stat(kModel.c_str(), &info) != 0 || ::stat(kLibrivox.c_str(), &info) != 0) GTEST_SKIP() << "no pocketsphinx data";
  std::string inputs;
  for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
    absl::StrAppend(&inputs, inputs.empty() ? "" : ",", kLibrivox, "/sense_and_sensibility_01_austen_64kb-", id, ".wav");
  }
  const std::string feats = Temp("feats.ark"), ubm = Temp("ubm.dubm");
  ASSERT_EQ(Gmmscore({"features", "--model", kModel, "--input", inputs, "--output", "ark:" + feats}).exit_code, 0);
  RunResult run = Gmmscore({"train-gmm", "--features", "ark:" + feats, "--num_gauss", "16", "--iterations", "4",
                            "--output", ubm, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const std::string per_utt = Temp("utt.ark"), per_spk = Temp("spk.ark"), spk2utt = Temp("spk2utt"),
                    utt2spk = Temp("utt2spk");
  run = Gmmscore({"est-fmllr", "--model", ubm, "--features", "ark:" + feats, "--output", "ark:" + per_utt});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("wrote 5 transforms (per utterance)"));
  EXPECT_THAT(run.err, HasSubstr("sense_and_sensibility_01_austen_64kb-0870: 709.0 frames, full transform"));
  const auto transforms = ReadKaldiMatrixArchive("ark:" + per_utt);
  ASSERT_TRUE(transforms.ok());
  ASSERT_EQ(transforms->size(), 5u);
  EXPECT_EQ((*transforms)[0].matrix.rows(), 39);
  EXPECT_EQ((*transforms)[0].matrix.cols(), 40);

  std::string spk_lines = "austen", utt_lines;
  for (const KaldiMatrixEntry& e : *transforms) {
    absl::StrAppend(&spk_lines, " ", e.key);
    absl::StrAppend(&utt_lines, e.key, " austen\n");
  }
  WriteFile(spk2utt, spk_lines + "\n");
  WriteFile(utt2spk, utt_lines);
  run = Gmmscore({"est-fmllr", "--model", ubm, "--features", "ark:" + feats, "--spk2utt", "ark:" + spk2utt,
                  "--output", "ark:" + per_spk});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("austen: 2468.0 frames, full transform"));

  const std::string plain = Temp("plain.ark"), by_utt = Temp("by_utt.ark"), by_spk = Temp("by_spk.ark");
  ASSERT_EQ(Gmmscore({"score", "--model", ubm, "--features", "ark:" + feats, "--output", "ark:" + plain,
                      "--backend", "cpu"}).exit_code, 0);
  ASSERT_EQ(Gmmscore({"score", "--model", ubm, "--features", "ark:" + feats, "--output", "ark:" + by_utt,
                      "--fmllr", "ark:" + per_utt, "--backend", "cpu"}).exit_code, 0);
  run = Gmmscore({"score", "--model", ubm, "--features", "ark:" + feats, "--output", "ark:" + by_spk, "--fmllr",
                  "ark:" + per_spk, "--utt2spk", utt2spk, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, FloatMatrix> utt_transform, spk_transform;
  for (const KaldiMatrixEntry& e : *transforms) utt_transform[e.key] = e.matrix;
  const auto speaker = ReadKaldiMatrixArchive("ark:" + per_spk);
  ASSERT_TRUE(speaker.ok());
  ASSERT_EQ(speaker->size(), 1u);
  for (const KaldiMatrixEntry& e : *transforms) spk_transform[e.key] = (*speaker)[0].matrix;
  const double base = LogLikelihoodPerFrame(plain, {});
  const double spk = LogLikelihoodPerFrame(by_spk, spk_transform);
  const double utt = LogLikelihoodPerFrame(by_utt, utt_transform);
  std::printf("log-likelihood per frame (with log|det A|): %.4f without fMLLR, %.4f per speaker, %.4f per utterance\n",
              base, spk, utt);
  EXPECT_GT(spk, base);
  EXPECT_GT(utt, spk);
}

TEST(FmllrCliTest, Errors) {
  const std::string feats = Temp("f.txt"), gmm = Temp("g.txt");
  WriteFile(feats, "u1 [\n 1 2\n 3 4\n ]\n");
  ExpectOneLineError(Gmmscore({"est-fmllr", "--features", "ark,t:" + feats, "--output", "ark:-"}), 2, "--model");
  ExpectOneLineError(Gmmscore({"est-fmllr", "--model", gmm, "--features", "ark,t:" + feats, "--alignments", "ark:a",
                               "--posteriors", "ark:p", "--output", "ark:-"}),
                     2, "at most one");
  ExpectOneLineError(Gmmscore({"est-fmllr", "--model", gmm, "--features", "ark,t:" + feats, "--output", "ark:-",
                               "--fmllr_fallback", "sideways"}),
                     2, "sideways");
}

}  // namespace
}  // namespace gmmscore
