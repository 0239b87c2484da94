// StatsPass keeps blocks resident when they fit the backend's budget and
// streams them through otherwise, with the same statistics either way.
#include "kernels/train/stats_pass.h"

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/train/cpu_stats_backend.h"

namespace gmmscore {
namespace {

// The CPU backend with a chosen frame budget, counting uploads.
class BudgetedBackend : public StatsBackend {
 public:
  explicit BudgetedBackend(int64_t budget) : budget_(budget) {}
  std::string name() const override { return "budgeted"; }
  absl::Status SetModel(const DiagGmmModel& model) override { return inner_->SetModel(model); }
  absl::StatusOr<std::unique_ptr<FrameBlock>> LoadFrames(ConstMatrixView frames) override {
    ++loads;
    return inner_->LoadFrames(frames);
  }
  absl::Status Accumulate(const FrameBlock& block, absl::Span<const StatsPair> pairs, GmmStats* stats) override {
    return inner_->Accumulate(block, pairs, stats);
  }
  int64_t frame_memory_budget() const override { return budget_; }
  int loads = 0;

 private:
  std::unique_ptr<StatsBackend> inner_ = CreateCpuStatsBackend({.num_threads = 2});
  int64_t budget_;
};

TEST(StatsPassTest, ResidentWhenItFitsStreamedWhenNot) {
  const DiagGmmModel model = *GenerateSyntheticModel({.num_states = 1, .min_gaussians = 8, .max_gaussians = 8,
                                                      .dim = 13, .seed = 3});
  const FloatMatrix frames = GenerateSyntheticFeatures(model, 10000, 4);
  const std::vector<TrainingBlock> blocks = BlocksOfFrames(frames.view(), 3000);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks.back().frames.rows(), 1000);

  BudgetedBackend roomy(int64_t{1} << 30), tight(1000);
  StatsPass resident(&roomy, &blocks), streamed(&tight, &blocks);
  int64_t progress_calls = 0;
  for (int pass = 0; pass < 3; ++pass) {
    auto a = resident.Run(model, 1, [&](int64_t done, int64_t all) {
      ++progress_calls;
      EXPECT_LE(done, all);
    });
    auto b = streamed.Run(model);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->occupancy, b->occupancy);
    EXPECT_EQ(a->var_acc, b->var_acc);
    EXPECT_DOUBLE_EQ(a->total_weight, 10000);
  }
  EXPECT_EQ(roomy.loads, 4);       // once, then kept
  EXPECT_EQ(tight.loads, 3 * 4);   // every pass
  EXPECT_TRUE(resident.resident());
  EXPECT_FALSE(streamed.resident());
  EXPECT_EQ(progress_calls, 3 * 4);
}

}  // namespace
}  // namespace gmmscore
