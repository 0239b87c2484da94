// The CUDA aligner engine against the host engine on real speech (librivox,
// en-us): the same words, boundaries within a frame or two (scores differ
// by float32 rounding between CPU and GPU kernels), in one chunk and in
// many; bad features fail alone. Skips without a GPU or pocketsphinx data.
#include "kernels/hmm/cuda/device_align_engine.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/hmm/ctm.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/hmm/sphinx_test_corpus.h"

namespace gmmscore {
namespace {

TEST(DeviceAlignEngineTest, MatchesTheHostEngineOnRealSpeech) {
  SKIP_WITHOUT_GPU();
  const std::string model = PocketsphinxRoot() + "/model/en-us/en-us", dict = PocketsphinxRoot() + "/model/en-us/cmudict-en-us.dict";
  const std::string librivox = PocketsphinxRoot() + "/test/data/librivox";
  if (!PathExists(model) || !PathExists(librivox)) GTEST_SKIP() << "no pocketsphinx data";
  const SphinxTestCorpus corpus = LoadSphinxTestCorpus(model, librivox + "/transcription", librivox);
  ASSERT_EQ(corpus.inputs.size(), 5u);
  FloatMatrix wrong(50, 13);
  std::vector<AlignInput> batch = corpus.inputs;
  batch.insert(batch.begin() + 2, {"wrong_dim", wrong.view(), {"he"}});
  std::unique_ptr<ScoringBackend> cpu = CreateCpuBackend({});
  auto host = SphinxAligner::Create(model, dict, cpu.get());
  ASSERT_TRUE(host.ok()) << host.status();
  const auto want = (*host)->Align(batch);
  std::string want_ctm;
  for (size_t k = 0; k < batch.size(); ++k) {
    if (want[k].ok()) want_ctm += WordCtm(batch[k].utterance, *want[k], 0.01);
  }
  for (const int64_t budget : {kAlignScoreBudgetBytes, int64_t{4} * 5126 * 400}) {
    SCOPED_TRACE(testing::Message() << "score budget " << budget << " bytes");
    SphinxAlignerOptions options;
    options.engine = [budget](std::shared_ptr<const TiedMixtureModel> m) {
      return MakeCudaAlignEngine(std::move(m), 0, budget);
    };
    auto device = SphinxAligner::Create(model, dict, nullptr, options);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ((*device)->engine_name(), "cuda:0");
    const auto got = (*device)->Align(batch);
    std::string got_ctm;
    for (size_t k = 0; k < batch.size(); ++k) {
      ASSERT_EQ(got[k].ok(), want[k].ok()) << batch[k].utterance << ": " << got[k].status();
      if (!got[k].ok()) {
        EXPECT_EQ(got[k].status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      got_ctm += WordCtm(batch[k].utterance, *got[k], 0.01);
      EXPECT_NEAR(got[k]->log_likelihood, want[k]->log_likelihood, 1e-4 * std::abs(want[k]->log_likelihood));
    }
    const BoundaryComparison c = CompareWordBoundaries(*ParseCtm(want_ctm, "cpu"), *ParseCtm(got_ctm, "cuda"));
    EXPECT_TRUE(c.mismatched.empty());
    EXPECT_EQ(c.words, 71);
    EXPECT_LE(c.Percentile(50), 0.0);
    EXPECT_LE(c.Percentile(100), 20.0);
    std::printf("cuda vs cpu engine: median %.0f ms, max %.0f ms; device scoring %.4f s, viterbi %.4f s\n",
                c.Percentile(50), c.Percentile(100), (*device)->last_timing().device_scoring,
                (*device)->last_timing().device_viterbi);
  }
}

}  // namespace
}  // namespace gmmscore
