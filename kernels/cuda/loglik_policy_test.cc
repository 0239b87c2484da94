// ChooseBlockedSlices without a GPU: the cases its comment works through,
// and over random launches the bounds it promises.
#include "kernels/cuda/loglik_policy.h"

#include <random>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

// 5000 x 256 x 36 under fused8x4 on an H100 or H200: 79 state blocks of 64
// groups of four, 132 SMs x 6 resident blocks.
constexpr int64_t kStateBlocks = 79;
constexpr int64_t kSlots = 132 * 6;
constexpr int kGroups = 64;

int SlicesAt(int64_t frames) {
  return ChooseBlockedSlices((frames + 7) / 8 * kStateBlocks, kSlots, kGroups, frames * 5000);
}

TEST(ChooseBlockedSlicesTest, FillsTheLastWaveOfTheBigModel) {
  EXPECT_EQ(SlicesAt(256), 4);   // 3.19 waves: 0.80 alone, 0.98 in four
  EXPECT_EQ(SlicesAt(128), 3);   // 1.60 waves: 0.80 alone, 0.96 in three
  EXPECT_EQ(SlicesAt(160), 1);   // 1.99 waves
  EXPECT_EQ(SlicesAt(1024), 1);  // 12.8 waves
}

TEST(ChooseBlockedSlicesTest, SmallStatesAndLargeBatchesStayWhole) {
  // 32 Gaussians a state are 8 groups: one slice's worth.
  EXPECT_EQ(ChooseBlockedSlices(32 * kStateBlocks, kSlots, 8, 256 * 5000), 1);
  // 64 MiB of partials hold 8M pairs: 4 slices of 2M outputs at most.
  EXPECT_EQ(ChooseBlockedSlices(100, kSlots, kGroups, int64_t{3} << 20), 2);
  EXPECT_EQ(ChooseBlockedSlices(100, kSlots, kGroups, int64_t{5} << 20), 1);
  EXPECT_EQ(ChooseBlockedSlices(0, kSlots, kGroups, 0), 1);
}

TEST(ChooseBlockedSlicesTest, NeverWorseThanWholeAndAlwaysWithinItsBounds) {
  std::mt19937_64 random(2026);
  const auto efficiency = [](int64_t blocks, int64_t slots, int slices) {
    const int64_t launched = blocks * slices;
    return static_cast<double>(launched) / static_cast<double>(slots) /
           static_cast<double>((launched + slots - 1) / slots);
  };
  for (int trial = 0; trial < 10000; ++trial) {
    const int64_t blocks = 1 + random() % 20000;
    const int64_t slots = 1 + random() % 2000;
    const int groups = 1 + static_cast<int>(random() % 200);
    const int64_t outputs = 1 + static_cast<int64_t>(random() % (int64_t{16} << 20));
    const int slices = ChooseBlockedSlices(blocks, slots, groups, outputs);
    ASSERT_GE(slices, 1);
    ASSERT_LE(slices, kMaxBlockedSlices);
    ASSERT_GE(efficiency(blocks, slots, slices), efficiency(blocks, slots, 1) - 1e-12);
    if (slices > 1) {
      EXPECT_GE(groups / slices, kMinGroupsPerSlice) << groups << " groups";
      EXPECT_LE(outputs * slices * 2 * static_cast<int64_t>(sizeof(float)), kMaxSlicePartialBytes);
    }
  }
}

}  // namespace
}  // namespace gmmscore
