// Baum-Welch of a Sphinx model with the forward-backward on the GPU
// (CudaGraphPosteriors) gives the CPU recursions' result: the same
// likelihood every iteration and the same re-estimated parameters, on
// an4_ci_cont and the cards recordings. Skips without a GPU or the data.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/backends/stats_backend_factory.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/gpu_test_util.h"
#include "kernels/hmm/cuda/graph_posteriors_batch.h"
#include "kernels/hmm/sphinx_test_corpus.h"

namespace gmmscore {
namespace {

TEST(SphinxBwCudaTest, GpuForwardBackwardGivesTheCpuResult) {
  SKIP_WITHOUT_GPU();
  const std::string an4 = PocketsphinxRoot() + "/test/data/an4_ci_cont", cards = PocketsphinxRoot() + "/test/data/cards";
  const std::string dict = PocketsphinxRoot() + "/model/en-us/cmudict-en-us.dict";
  if (!PathExists(an4) || !PathExists(cards)) GTEST_SKIP() << "no pocketsphinx data";
  const SphinxTestCorpus corpus = LoadSphinxTestCorpus(an4, cards + "/cards.transcription", cards);
  const std::vector<AlignInput>& inputs = corpus.inputs;
  ASSERT_EQ(inputs.size(), 5u);
  const auto lexicon = LoadSphinxLexicon(an4, dict);
  ASSERT_TRUE(lexicon.ok()) << lexicon.status();
  std::unique_ptr<ScoringBackend> scorer = CreateCpuBackend({});
  auto stats = CreateStatsBackend("cpu");
  ASSERT_TRUE(stats.ok());
  std::vector<double> cpu_ll, gpu_ll;
  const auto cpu = TrainSphinxModel(an4, *lexicon, inputs, *scorer, **stats, {.iterations = 3},
                                    [&](const SphinxBaumWelchIteration& it) { cpu_ll.push_back(it.loglike_per_frame); });
  SphinxBaumWelchOptions options{.iterations = 3};
  options.forward_backward = CudaGraphPosteriors(0);
  const auto gpu = TrainSphinxModel(an4, *lexicon, inputs, *scorer, **stats, options,
                                    [&](const SphinxBaumWelchIteration& it) { gpu_ll.push_back(it.loglike_per_frame); });
  ASSERT_TRUE(cpu.ok() && gpu.ok()) << cpu.status() << gpu.status();
  ASSERT_EQ(cpu_ll.size(), gpu_ll.size());
  for (size_t i = 0; i < cpu_ll.size(); ++i) EXPECT_NEAR(gpu_ll[i], cpu_ll[i], 1e-6 * std::abs(cpu_ll[i])) << i;
  double worst = 0;
  for (size_t i = 0; i < cpu->means.values.size(); ++i) {
    worst = std::max(worst, double{std::abs(gpu->means.values[i] - cpu->means.values[i])});
  }
  for (size_t i = 0; i < cpu->transitions.probs.size(); ++i) {
    worst = std::max(worst, double{std::abs(gpu->transitions.probs[i] - cpu->transitions.probs[i])});
  }
  EXPECT_LT(worst, 1e-4);
  std::printf("GPU vs CPU Baum-Welch: log-likelihood per frame %.6f vs %.6f after 3 iterations; largest parameter "
              "difference %.2g\n", gpu_ll.back(), cpu_ll.back(), worst);
}

}  // namespace
}  // namespace gmmscore
