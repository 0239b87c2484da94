// The transition model's ML update (Kaldi's TransitionModel::MleUpdate):
// counts give their normalised probabilities, states below the minimum count
// and single-transition states keep theirs, floors hold, the reported
// objective improvement is the counts' log-likelihood gain, and bad counts
// leave the model as it was.
#include "kernels/train/transition_update.h"

#include <cmath>

#include "gtest/gtest.h"
#include "kernels/io/internal/kaldi_test_models.h"
#include "kernels/io/kaldi_am_diag_gmm.h"

namespace gmmscore {
namespace {

// io_testing::SixPdfTransitionModelText: transition-states 1..6 of two
// transitions each (self-loop first), transition-ids 1..12.
KaldiTransitionModel ThreeStateModel() {
  std::string text = io_testing::SixPdfTransitionModelText() + "<DIMENSION> 1 <NUMPDFS> 6 ";
  for (int i = 0; i < 6; ++i) {
    text += "<DiagGMM> \n<GCONSTS>  [ -1 ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  0 ]\n<INV_VARS>  [\n  1 ]\n</DiagGMM> \n";
  }
  absl::StatusOr<KaldiModel> model = ParseKaldiModel(text, "three_state.mdl");
  EXPECT_TRUE(model.ok()) << model.status();
  return *model->transition_model;
}

TEST(TransitionUpdateTest, CountsBecomeProbabilitiesAsKaldiUpdatesThem) {
  KaldiTransitionModel tm = ThreeStateModel();
  ASSERT_EQ(tm.num_transition_ids(), 12);
  const std::vector<float> before = tm.log_probs;
  std::vector<double> counts(13, 0.0);
  counts[1] = 90, counts[2] = 10;    // state 1: 0.9 / 0.1
  counts[3] = 2, counts[4] = 2;      // state 2: 4 < min count 5, unchanged
  counts[5] = 1000, counts[6] = 0;   // state 3: the forward transition floored
  TransitionUpdateReport report;
  ASSERT_TRUE(MleTransitionUpdate(counts, {}, &tm, &report).ok());
  EXPECT_NEAR(tm.log_probs[1], std::log(0.9), 1e-6);
  EXPECT_NEAR(tm.log_probs[2], std::log(0.1), 1e-6);
  EXPECT_EQ(tm.log_probs[3], before[3]);
  EXPECT_EQ(tm.log_probs[4], before[4]);
  EXPECT_EQ(tm.log_probs[6], std::log(0.01f));  // at the floor after the last round
  EXPECT_NEAR(std::exp(tm.log_probs[5]) + std::exp(tm.log_probs[6]), 1.0, 1e-4);
  for (int tid = 7; tid <= 12; ++tid) EXPECT_EQ(tm.log_probs[tid], before[tid]) << tid;  // no counts
  EXPECT_EQ(report.updated_states, 2);
  EXPECT_EQ(report.skipped_states, 4);  // state 2 (4 counts) and states 4-6 (none)
  EXPECT_EQ(report.floored, 1);
  EXPECT_DOUBLE_EQ(report.count, 1104.0);
  double gain = 0.0;
  for (int tid = 1; tid <= 12; ++tid) gain += counts[tid] * (double{tm.log_probs[tid]} - double{before[tid]});
  EXPECT_NEAR(report.objective_improvement, gain, 1e-9 * std::abs(gain));
  EXPECT_GT(report.objective_improvement, 0.0);
}

TEST(TransitionUpdateTest, OptionsChangeTheFloorAndTheMinimumCount) {
  KaldiTransitionModel tm = ThreeStateModel();
  std::vector<double> counts(13, 0.0);
  counts[3] = 2, counts[4] = 2;
  counts[5] = 1000;
  TransitionUpdateReport report;
  ASSERT_TRUE(MleTransitionUpdate(counts, {.floor = 0.05, .min_count = 1.0}, &tm, &report).ok());
  EXPECT_NEAR(tm.log_probs[3], std::log(0.5), 1e-6);
  EXPECT_EQ(tm.log_probs[6], std::log(0.05f));
}

TEST(TransitionUpdateTest, BadCountsLeaveTheModelUnchanged) {
  const KaldiTransitionModel original = ThreeStateModel();
  TransitionUpdateReport report;
  for (std::vector<double> counts : {std::vector<double>(12, 1.0), std::vector<double>(14, 1.0)}) {
    KaldiTransitionModel tm = original;
    EXPECT_EQ(MleTransitionUpdate(counts, {}, &tm, &report).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(tm.log_probs, original.log_probs);
  }
  for (double bad : {-1.0, std::nan(""), double{INFINITY}}) {
    KaldiTransitionModel tm = original;
    std::vector<double> counts(13, 10.0);
    counts[7] = bad;
    EXPECT_EQ(MleTransitionUpdate(counts, {}, &tm, &report).code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(tm.log_probs, original.log_probs);
  }
  KaldiTransitionModel tm = original;
  EXPECT_EQ(MleTransitionUpdate(std::vector<double>(13, 1.0), {.floor = 1.0}, &tm, &report).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MleTransitionUpdate(std::vector<double>(13, 1.0), {.floor = 0.0}, &tm, &report).code(),
            absl::StatusCode::kInvalidArgument);  // log 0 for a transition never seen
  EXPECT_EQ(tm.log_probs, original.log_probs);
}

}  // namespace
}  // namespace gmmscore
