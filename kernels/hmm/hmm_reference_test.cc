// The float64 HMM recursions against brute force: every state sequence of
// small HMMs enumerated, with zero initial probabilities and forbidden
// transitions; plus the file format.
#include "kernels/hmm/hmm_reference.h"

#include <cmath>
#include <limits>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/hmm/dense_hmm.h"
#include "kernels/hmm/hmm_test_util.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogAdd(double a, double b) {
  if (a < b) std::swap(a, b);
  return b == kNegInf ? a : a + std::log1p(std::exp(b - a));
}

// Every state sequence: its log probability, summed into the total, the
// posteriors and the transition counts; the best one.
struct BruteForce {
  double log_likelihood = kNegInf;
  std::vector<double> gamma, counts;
  double best = kNegInf;
  std::vector<int32_t> best_path;
};

// The log probability of one state sequence.
double PathLogProb(const DenseHmm& hmm, const FloatMatrix& loglikes, const std::vector<int32_t>& path) {
  double lp = hmm.log_initial[path[0]] + loglikes.row(0)[hmm.emissions[path[0]]];
  for (int64_t t = 1; t < loglikes.rows(); ++t) {
    lp += hmm.log_transition(path[t - 1], path[t]) + loglikes.row(t)[hmm.emissions[path[t]]];
  }
  return lp;
}

BruteForce Enumerate(const DenseHmm& hmm, const FloatMatrix& loglikes) {
  const int n = hmm.num_states;
  const int64_t frames = loglikes.rows();
  std::vector<int32_t> path(frames, 0);
  std::vector<std::pair<double, std::vector<int32_t>>> all;
  while (true) {
    all.push_back({PathLogProb(hmm, loglikes, path), path});
    int64_t k = frames - 1;
    while (k >= 0 && ++path[k] == n) path[k--] = 0;
    if (k < 0) break;
  }
  BruteForce out;
  for (const auto& [lp, p] : all) {
    out.log_likelihood = LogAdd(out.log_likelihood, lp);
    if (lp > out.best) out.best = lp, out.best_path = p;
  }
  out.gamma.assign(frames * n, 0.0);
  out.counts.assign(n * n, 0.0);
  for (const auto& [lp, p] : all) {
    const double weight = std::exp(lp - out.log_likelihood);
    for (int64_t t = 0; t < frames; ++t) {
      out.gamma[t * n + p[t]] += weight;
      if (t > 0) out.counts[p[t - 1] * n + p[t]] += weight;
    }
  }
  return out;
}

TEST(HmmReferenceTest, MatchesEveryPathEnumerated) {
  const uint64_t seed = FreshTestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (const auto& [n, frames] : {std::pair{1, 1}, {1, 5}, {2, 1}, {2, 2}, {2, 9}, {3, 6}, {4, 5}, {7, 3}}) {
    SCOPED_TRACE(testing::Message() << "N " << n << " T " << frames);
    const DenseHmm hmm = RandomDenseHmm(n, 5, rng);
    const FloatMatrix loglikes = RandomLoglikes(frames, 5, rng);
    const BruteForce want = Enumerate(hmm, loglikes);
    auto post = ForwardBackwardReference(hmm, loglikes.view());
    ASSERT_TRUE(post.ok()) << post.status();
    EXPECT_NEAR(post->log_likelihood, want.log_likelihood, 1e-10 * std::fabs(want.log_likelihood));
    EXPECT_THAT(post->gamma, testing::Pointwise(testing::DoubleNear(1e-10), want.gamma));
    EXPECT_THAT(post->transition_counts, testing::Pointwise(testing::DoubleNear(1e-10), want.counts));
    auto best = ViterbiReference(hmm, loglikes.view());
    ASSERT_TRUE(best.ok());
    // The best path, or one that ties with it: states sharing an emission
    // can give two paths the same probability, and then either is right
    // (seed 7994186489090084637 gave such a tie under ASan's CI run).
    ASSERT_EQ(best->states.size(), want.best_path.size());
    EXPECT_NEAR(PathLogProb(hmm, loglikes, best->states), want.best, 1e-10 * std::fabs(want.best))
        << testing::PrintToString(best->states) << " vs " << testing::PrintToString(want.best_path);
    EXPECT_NEAR(best->log_likelihood, want.best, 1e-10 * std::fabs(want.best));
    // A state that cannot start is never first.
    if (n > 1) EXPECT_EQ(post->gamma[0], 0.0);
  }
}

TEST(HmmReferenceTest, NoPathAndBadInputAreErrors) {
  // Two states, each only to itself, only state 0 may start, and state 0's
  // emission is impossible on frame 1: no path.
  const DenseHmm hmm = *MakeDenseHmm({0, 1}, {1.0, 0.0}, {1.0, 0.0, 0.0, 1.0});
  FloatMatrix loglikes(3, 2, -1.0f);
  loglikes.row(1)[0] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(ForwardBackwardReference(hmm, loglikes.view()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ViterbiReference(hmm, loglikes.view()).status().code(), absl::StatusCode::kFailedPrecondition);
  loglikes.row(1)[0] = std::nanf("");
  EXPECT_EQ(ForwardBackwardReference(hmm, loglikes.view()).status().code(), absl::StatusCode::kInvalidArgument);
  const FloatMatrix no_frames(0, 2), too_narrow(3, 1);
  EXPECT_EQ(ViterbiReference(hmm, no_frames.view()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ForwardBackwardReference(hmm, too_narrow.view()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DenseHmmTest, FileRoundTripsAndErrorsNameTheLine) {
  std::mt19937_64 rng(5);
  const DenseHmm hmm = RandomDenseHmm(7, 9, rng);
  const std::string text = FormatDenseHmm(hmm);
  auto back = ParseDenseHmm(text, "x.hmm");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->emissions, hmm.emissions);
  EXPECT_THAT(back->log_transitions, testing::Pointwise(testing::DoubleNear(1e-15), hmm.log_transitions));
  EXPECT_EQ(back->log_initial[0], kNegInf);

  const std::string good =
      "gmmscore-dense-hmm 1  # a comment\nstates 2\nemissions 0 3\ninitial 1 0\ntransitions\n0.5 0.5\n0 1\n";
  ASSERT_TRUE(ParseDenseHmm(good, "g").ok());
  EXPECT_EQ(ParseDenseHmm(good, "g")->num_emission_states(), 4);
  struct Bad {
    std::string text;
    absl::StatusCode code;
    std::string mentions;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"gmmscore-dense-hmm 2\n", absl::StatusCode::kInvalidArgument, "line 1"},
           {"gmmscore-dense-hmm 1\nstates 2\nemissions 0 -1\n", absl::StatusCode::kInvalidArgument, "line 3"},
           {"gmmscore-dense-hmm 1\nstates 2\nemissions 0 1\ninitial 0.5 0.6\ntransitions\n1 0\n0 1\n",
            absl::StatusCode::kInvalidArgument, "initial distribution sums"},
           {"gmmscore-dense-hmm 1\nstates 2\nemissions 0 1\ninitial 1 0\ntransitions\n1 0\n0.2 0.7\n",
            absl::StatusCode::kInvalidArgument, "transition row 1"},
           {"gmmscore-dense-hmm 1\nstates 2\nemissions 0 1\ninitial 1 0\ntransitions\n1 0\n0 nan\n",
            absl::StatusCode::kInvalidArgument, "line 7"},
           {"gmmscore-dense-hmm 1\nstates 2\nemissions 0 1\ninitial 1 0\ntransitions\n1 0\n", absl::StatusCode::kDataLoss,
            "ends before"},
           {good + "1\n", absl::StatusCode::kInvalidArgument, "after the transitions"},
       }) {
    const absl::Status status = ParseDenseHmm(bad.text, "bad.hmm").status();
    EXPECT_EQ(status.code(), bad.code) << bad.text << status;
    EXPECT_THAT(status.message(), testing::HasSubstr(bad.mentions)) << bad.text;
  }
  EXPECT_EQ(ReadDenseHmm("/nonexistent.hmm").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gmmscore
