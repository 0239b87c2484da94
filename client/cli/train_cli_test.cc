// The training commands end to end on real speech (pocketsphinx-testdata
// cepstra): EM raises the likelihood every iteration, accumulators of two
// halves summed equal one pass over all, est and adapt-map write models that
// load, and bad combinations of flags are usage errors.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "client/cli/cli_test_util.h"
#include "kernels/hmm/dense_hmm.h"
#include "kernels/io/internal/kaldi_test_models.h"
#include "kernels/io/kaldi_am_diag_gmm.h"
#include "kernels/io/kaldi_gmm_accs.h"
#include "kernels/io/kaldi_int_vector_archive.h"
#include "kernels/io/kaldi_posterior_archive.h"
#include "kernels/io/kaldi_matrix_archive.h"
#include "kernels/io/model_loader.h"
#include "kernels/io/sphinx_features.h"

namespace gmmscore {
namespace {

const std::string kTestData = "/usr/share/pocketsphinx/test/data";

// The testdata's tidigits and goforward cepstra (13-d, as Sphinx wrote
// them) in two Kaldi archives of alternate utterances; empty when absent.
std::vector<KaldiMatrixEntry> RealSpeech() {
  std::vector<KaldiMatrixEntry> entries;
  std::error_code error;
  for (const auto& file : std::filesystem::directory_iterator(kTestData + "/tidigits", error)) {
    if (file.path().extension() != ".mfc") continue;
    absl::StatusOr<FloatMatrix> cepstra = ReadSphinxMfc(file.path().string());
    if (cepstra.ok()) entries.push_back({file.path().stem().string(), *std::move(cepstra)});
  }
  absl::StatusOr<FloatMatrix> go = ReadSphinxMfc(kTestData + "/goforward.mfc");
  if (go.ok()) entries.push_back({"goforward", *std::move(go)});
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return entries;
}

std::vector<double> LoglikesPerIteration(const std::string& log) {
  std::vector<double> values;
  const std::regex line("log-likelihood (-?[0-9.]+) per frame");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    values.push_back(std::stod((*it)[1]));
  }
  return values;
}

class TrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    entries_ = RealSpeech();
    if (entries_.size() < 4) GTEST_SKIP() << "pocketsphinx-testdata is missing: run tools/install_deps.sh";
    all_ = Temp("all.ark");
    ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", all_), entries_).ok());
    std::vector<KaldiMatrixEntry> halves[2];
    for (size_t i = 0; i < entries_.size(); ++i) halves[i % 2].push_back(entries_[i]);
    for (int h = 0; h < 2; ++h) {
      half_[h] = Temp(absl::StrCat("half", h, ".ark"));
      ASSERT_TRUE(WriteKaldiMatrixArchive(absl::StrCat("ark:", half_[h]), halves[h]).ok());
    }
  }
  std::vector<KaldiMatrixEntry> entries_;
  std::string all_, half_[2];
};

TEST_F(TrainCliTest, TrainGmmOnRealSpeechRaisesTheLikelihoodEveryIteration) {
  const std::string ubm = Temp("ubm.txt");
  const RunResult run = Gmmscore({"train-gmm", "--features", "ark:" + all_, "--num-gauss", "8", "--iterations",
                                  "8", "--output", ubm, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<double> loglikes = LoglikesPerIteration(run.err);
  ASSERT_EQ(loglikes.size(), 8u) << run.err;
  for (size_t i = 1; i < loglikes.size(); ++i) EXPECT_GT(loglikes[i], loglikes[i - 1]) << run.err;
  absl::StatusOr<DiagGmmModel> model = LoadModel(ubm);  // Kaldi text DiagGMM, by its name
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_gaussians(), 8);
  EXPECT_EQ(model->dim(), 13);
}

TEST_F(TrainCliTest, AccumulatorsOfTwoHalvesSumToOnePassAndEstimate) {
  const std::string ubm = Temp("ubm.gmm");
  ASSERT_EQ(Gmmscore({"train-gmm", "--features", "ark:" + all_, "--num_gauss", "4", "--iterations", "2",
                      "--output", ubm, "--backend", "cpu"}).exit_code, 0);
  const std::string whole = Temp("all.acc"), a = Temp("a.acc"), b = Temp("b.acc"), sum = Temp("sum.acc");
  for (const auto& [features, out, binary] :
       {std::tuple{all_, whole, "true"}, {half_[0], a, "false"}, {half_[1], b, "true"}}) {
    const RunResult run = Gmmscore({"acc-stats", "--model", ubm, "--features", "ark:" + features, "--output", out,
                                    "--binary=" + std::string(binary), "--backend", "cpu"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  RunResult run = Gmmscore({"sum-accs", "--output", sum, a, b});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<KaldiAccs> one = ReadKaldiAccs(whole), two = ReadKaldiAccs(sum);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->stats.occupancy.size(), two->stats.occupancy.size());
  for (size_t i = 0; i < one->stats.var_acc.size(); ++i) {
    // Files hold float32: equal to float32 rounding of the two sums.
    EXPECT_NEAR(two->stats.var_acc[i], one->stats.var_acc[i], 1e-6 * std::fabs(one->stats.var_acc[i]) + 1e-3);
  }
  const std::string next = Temp("next.ubm");
  run = Gmmscore({"est", "--model", ubm, "--stats", sum, "--output", next, "--mix-up", "6"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<DiagGmmModel> model = LoadModel(next);  // Kaldi binary DiagGMM
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_gaussians(), 6);
  // Mismatched accumulators: a clear error naming both.
  const std::string other = Temp("other.gmm");
  ASSERT_EQ(Gmmscore({"train-gmm", "--features", "ark:" + all_, "--num_gauss", "3", "--iterations", "1",
                      "--output", other, "--backend", "cpu"}).exit_code, 0);
  const std::string c = Temp("c.acc");
  ASSERT_EQ(Gmmscore({"acc-stats", "--model", other, "--features", "ark:" + half_[0], "--output", c}).exit_code, 0);
  run = Gmmscore({"sum-accs", "--output", sum, a, c});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, testing::HasSubstr(c));
}

TEST_F(TrainCliTest, AdaptMapWritesOneModelPerSpeaker) {
  const std::string ubm = Temp("ubm.gmm");
  ASSERT_EQ(Gmmscore({"train-gmm", "--features", "ark:" + all_, "--num_gauss", "4", "--iterations", "2",
                      "--output", ubm, "--backend", "cpu"}).exit_code, 0);
  const std::string spk2utt = Temp("spk2utt");
  std::ofstream(spk2utt) << "even " << entries_[0].key << " " << entries_[2].key << "\nodd " << entries_[1].key
                         << "\n";
  const std::string dir = Temp("speakers");
  RunResult run = Gmmscore({"adapt-map", "--model", ubm, "--features", "ark:" + all_, "--spk2utt", spk2utt,
                            "--output-dir", dir, "--update", "means,weights", "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<DiagGmmModel> prior = LoadModel(ubm), even = LoadModel(dir + "/even.gmm"),
                               odd = LoadModel(dir + "/odd.gmm");
  ASSERT_TRUE(prior.ok() && even.ok() && odd.ok());
  EXPECT_NE(even->Natural(0).mean, prior->Natural(0).mean);
  EXPECT_NE(even->Natural(0).mean, odd->Natural(0).mean);
  // The utterances without a speaker are skipped with a warning.
  EXPECT_THAT(run.err, testing::HasSubstr("has no speaker"));
  run = Gmmscore({"adapt-map", "--model", ubm, "--features", "ark:" + all_, "--spk2utt", spk2utt});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  run = Gmmscore({"acc-stats", "--model", ubm, "--features", "ark:" + all_, "--output", Temp("x"),
                  "--alignments", "ark:/nonexistent", "--posteriors", "ark:/nonexistent"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
}


TEST_F(TrainCliTest, AcousticModelFromAlignmentsOrPosteriors) {
  const std::string am = Temp("am.gmm");
  ASSERT_EQ(Gmmscore({"synth", "--states", "6", "--gaussians", "2", "--dim", "13", "--output", am}).exit_code, 0);
  // Every frame to a state that depends on its position; the posteriors say
  // the same with weight 1, so both files must hold the same statistics.
  std::vector<KaldiIntVectorEntry> alignments;
  std::vector<KaldiPosteriorEntry> posteriors;
  for (const KaldiMatrixEntry& entry : entries_) {
    KaldiIntVectorEntry& ali = alignments.emplace_back();
    KaldiPosteriorEntry& post = posteriors.emplace_back();
    ali.key = post.key = entry.key;
    for (int64_t t = 0; t < entry.matrix.rows(); ++t) {
      const int32_t pdf = static_cast<int32_t>((t / 7) % 5);  // state 5 gets nothing
      ali.value.push_back(pdf);
      post.value.push_back({{pdf, 1.0f}});
    }
  }
  alignments.pop_back();  // the last utterance has no alignment: skipped with a warning
  const std::string ali = Temp("ali.ark"), post = Temp("post.ark");
  ASSERT_TRUE(WriteKaldiIntVectorArchive("ark:" + ali, alignments).ok());
  ASSERT_TRUE(WriteKaldiPosteriorArchive("ark,t:" + post, posteriors).ok());
  const std::string by_ali = Temp("ali.acc"), by_post = Temp("post.acc");
  RunResult run = Gmmscore({"acc-stats", "--model", am, "--features", "ark:" + all_, "--alignments", "ark:" + ali,
                            "--output", by_ali, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, testing::HasSubstr("has no alignment: skipped"));
  posteriors.pop_back();
  ASSERT_TRUE(WriteKaldiPosteriorArchive("ark,t:" + post, posteriors).ok());
  run = Gmmscore({"acc-stats", "--model", am, "--features", "ark:" + all_, "--posteriors", "ark:" + post,
                  "--output", by_post, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<KaldiAccs> a = ReadKaldiAccs(by_ali), p = ReadKaldiAccs(by_post);
  ASSERT_TRUE(a.ok() && p.ok());
  EXPECT_TRUE(a->is_am);
  EXPECT_EQ(a->stats.num_states(), 6);
  EXPECT_EQ(a->stats.occupancy, p->stats.occupancy);
  EXPECT_EQ(a->stats.StateOccupancy(0, 5), 0.0);
  // Estimation with mixing-up: state 5 (no data) stays as it was, with a warning.
  const std::string next = Temp("next.gmm");
  run = Gmmscore({"est", "--model", am, "--stats", by_ali, "--output", next, "--mix_up", "16",
                  "--min_count", "5"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, testing::HasSubstr("state 5 has no data"));
  absl::StatusOr<DiagGmmModel> model = LoadModel(next);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_states(), 6);
  EXPECT_GT(model->num_gaussians(), 12);
  // A pdf id beyond the model is an error naming the utterance.
  alignments[0].value[3] = 6;
  ASSERT_TRUE(WriteKaldiIntVectorArchive("ark:" + ali, alignments).ok());
  run = Gmmscore({"acc-stats", "--model", am, "--features", "ark:" + all_, "--alignments", "ark:" + ali,
                  "--output", by_ali});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, testing::HasSubstr(alignments[0].key));
  // An acoustic model without alignments is a usage error, not a silent UBM.
  run = Gmmscore({"acc-stats", "--model", am, "--features", "ark:" + all_, "--output", by_ali});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, testing::HasSubstr("needs alignments or posteriors"));
}

// Kaldi's own loop, gmm-acc-stats-ali then gmm-est, on a final.mdl: its
// transition-id alignments feed the same GMM statistics as the pdf ids they
// map to, the transitions are counted, and est re-estimates them and writes
// the TransitionModel back with the acoustic model.
TEST_F(TrainCliTest, KaldiTransitionIdAlignmentsAndEstKeepTheTransitionModel) {
  const std::string synth = Temp("am.gmm");
  ASSERT_EQ(Gmmscore({"synth", "--states", "6", "--gaussians", "2", "--dim", "13", "--output", synth}).exit_code, 0);
  absl::StatusOr<DiagGmmModel> am = LoadModel(synth);
  ASSERT_TRUE(am.ok()) << am.status();
  // Transition-ids 2s-1 (self-loop) and 2s (forward) of pdf s-1.
  const std::string tm = io_testing::SixPdfTransitionModelText();
  const std::string final_mdl = Temp("final.mdl.txt");
  std::ofstream(final_mdl) << tm << FormatKaldiAmDiagGmmText(DiagGmmModelToKaldi(*am));

  std::vector<KaldiIntVectorEntry> tids, pdfs;
  std::vector<double> counts(13, 0.0);
  for (const KaldiMatrixEntry& entry : entries_) {
    KaldiIntVectorEntry& t_ali = tids.emplace_back();
    KaldiIntVectorEntry& p_ali = pdfs.emplace_back();
    t_ali.key = p_ali.key = entry.key;
    for (int64_t t = 0; t < entry.matrix.rows(); ++t) {
      const int32_t tid = 1 + static_cast<int32_t>((t * 5 + t / 3) % 12);
      t_ali.value.push_back(tid);
      p_ali.value.push_back((tid - 1) / 2);
      counts[tid] += 1.0;
    }
  }
  const std::string tid_ali = Temp("tid.ark"), pdf_ali = Temp("pdf.ark");
  ASSERT_TRUE(WriteKaldiIntVectorArchive("ark:" + tid_ali, tids).ok());
  ASSERT_TRUE(WriteKaldiIntVectorArchive("ark:" + pdf_ali, pdfs).ok());
  const std::string by_tid = Temp("tid.acc"), by_pdf = Temp("pdf.acc");
  RunResult run = Gmmscore({"acc-stats", "--model", final_mdl, "--features", "ark:" + all_, "--alignments",
                            "ark:" + tid_ali, "--transition_ids", "--output", by_tid});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  run = Gmmscore({"acc-stats", "--model", final_mdl, "--features", "ark:" + all_, "--alignments", "ark:" + pdf_ali,
                  "--output", by_pdf});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<KaldiAccs> t = ReadKaldiAccs(by_tid), p = ReadKaldiAccs(by_pdf);
  ASSERT_TRUE(t.ok() && p.ok());
  EXPECT_EQ(t->stats.occupancy, p->stats.occupancy);
  EXPECT_EQ(t->stats.mean_acc, p->stats.mean_acc);
  EXPECT_EQ(t->transition_accs, counts);
  EXPECT_EQ(p->transition_accs, std::vector<double>(13, 0.0));  // pdf ids carry no transitions

  const std::string next = Temp("next.mdl");
  run = Gmmscore({"est", "--model", final_mdl, "--stats", by_tid, "--output", next});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, testing::HasSubstr("6 states updated"));
  absl::StatusOr<KaldiModel> estimated = ReadKaldiModel(next);  // binary, by its name
  ASSERT_TRUE(estimated.ok()) << estimated.status();
  ASSERT_TRUE(estimated->transition_model.has_value());
  EXPECT_TRUE(estimated->binary);
  int floored = 0;
  for (int s = 1; s <= 6; ++s) {
    // The self-loop's share; states whose forward transition was never seen
    // keep the floor (0.01) for it, as gmm-est does.
    const double share = counts[2 * s - 1] / (counts[2 * s - 1] + counts[2 * s]);
    const double got = std::exp(estimated->transition_model->log_probs[2 * s - 1]);
    if (share > 0.01 && share < 0.99) {
      EXPECT_NEAR(got, share, 1e-5) << s;
    } else {
      ++floored;
      EXPECT_NEAR(got, share < 0.5 ? 0.01 : 0.99, 1e-4) << s;
    }
  }
  EXPECT_GT(floored, 0);
  EXPECT_LT(floored, 6);
  EXPECT_EQ(estimated->am.pdfs.size(), 6u);
  // Without "t" the transitions stay as they were.
  run = Gmmscore({"est", "--model", final_mdl, "--stats", by_tid, "--output", next, "--update_flags", "mvw"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  estimated = ReadKaldiModel(next);
  ASSERT_TRUE(estimated.ok()) << estimated.status();
  EXPECT_FLOAT_EQ(estimated->transition_model->log_probs[1], -0.2876821f);
  // Transition-ids need a model with a TransitionModel.
  run = Gmmscore({"acc-stats", "--model", synth, "--features", "ark:" + all_, "--alignments", "ark:" + tid_ali,
                  "--transition_ids", "--output", by_tid});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_THAT(run.err, testing::HasSubstr("has none"));
}

TEST_F(TrainCliTest, DenseHmmForwardAndBaumWelch) {
  const std::string am = Temp("am.gmm"), hmm = Temp("three.hmm"), next = Temp("next.hmm"), gmms = Temp("next.gmm");
  ASSERT_EQ(Gmmscore({"synth", "--states", "3", "--gaussians", "2", "--dim", "13", "--output", am}).exit_code, 0);
  WriteFile(hmm,
            "gmmscore-dense-hmm 1\nstates 3\nemissions 0 1 2\ninitial 0.34 0.33 0.33\ntransitions\n"
            "0.34 0.33 0.33\n0.33 0.34 0.33\n0.33 0.33 0.34\n");
  RunResult run = Gmmscore({"hmm-forward", "--hmm", hmm, "--model", am, "--features", "ark:" + all_, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), static_cast<long>(entries_.size()));
  EXPECT_THAT(run.out, testing::HasSubstr(entries_[0].key + " -"));
  run = Gmmscore({"hmm-train", "--hmm", hmm, "--model", am, "--features", "ark:" + all_, "--iterations", "4",
                  "--output", next, "--output-model", gmms, "--backend", "cpu"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<double> loglikes = LoglikesPerIteration(run.err);
  ASSERT_EQ(loglikes.size(), 4u) << run.err;
  for (size_t i = 1; i < loglikes.size(); ++i) EXPECT_GE(loglikes[i], loglikes[i - 1] - 1e-4) << run.err;
  EXPECT_GT(loglikes.back(), loglikes.front());
  absl::StatusOr<DenseHmm> trained = ReadDenseHmm(next);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_TRUE(LoadModel(gmms).ok());
  // Emissions beyond the model, and a malformed file: one clear error each.
  WriteFile(hmm, "gmmscore-dense-hmm 1\nstates 1\nemissions 7\ninitial 1\ntransitions\n1\n");
  ExpectOneLineError(Gmmscore({"hmm-forward", "--hmm", hmm, "--model", am, "--features", "ark:" + all_}), 1,
                     "need 8 GMM states");
  WriteFile(hmm, "gmmscore-dense-hmm 1\nstates 1\nemissions 0\ninitial 0.5\ntransitions\n1\n");
  ExpectOneLineError(Gmmscore({"hmm-forward", "--hmm", hmm, "--model", am, "--features", "ark:" + all_}), 1,
                     "initial distribution sums to 0.5");
}

}  // namespace
}  // namespace gmmscore
