// The tensor-core layout on the CPU: row groups never straddle states,
// ranges are whole states, and big + small reproduce every parameter to
// float32-class accuracy.
#include "kernels/cuda/tc_layout.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

TEST(TensorCoreLayoutTest, RoundToTf32KeepsTenMantissaBits) {
  for (float v : {1.0f, -3.14159265f, 1e-20f, -7.5e12f, 0.0f}) {
    const float r = RoundToTf32(v);
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    EXPECT_EQ(bits & 0x1FFFu, 0u) << v;
    EXPECT_LE(std::abs(r - v), std::abs(v) * 0x1.0p-11) << v;
  }
  EXPECT_EQ(RoundToTf32(1.0f + 0x1.0p-11f), 1.0f + 0x1.0p-10f);  // a tie rounds away from zero
}

TEST(TensorCoreLayoutTest, RowGroupsRangesAndSplitsAreConsistent) {
  auto model = GenerateSyntheticModel({.num_states = 300, .min_gaussians = 1, .max_gaussians = 300, .dim = 39, .seed = 8});
  ASSERT_TRUE(model.ok());
  const TensorCoreLayout layout = BuildTensorCoreLayout(*model);
  EXPECT_EQ(layout.cols, 80);
  int64_t expected_rows = 0;
  for (int s = 0; s < model->num_states(); ++s) expected_rows += (model->num_gaussians_in_state(s) + 7) / 8 * 8;
  EXPECT_EQ(layout.rows, expected_rows);
  ASSERT_EQ(static_cast<int64_t>(layout.row_group_state.size()), layout.rows / 8);
  // Ranges start and end on state boundaries and cover every row group once.
  EXPECT_EQ(layout.range_begin.front(), 0);
  EXPECT_EQ(layout.range_begin.back(), static_cast<int>(layout.row_group_state.size()));
  for (int r = 1; r + 1 < static_cast<int>(layout.range_begin.size()); ++r) {
    const int g = layout.range_begin[r];
    EXPECT_NE(layout.row_group_state[g], layout.row_group_state[g - 1]);
  }
  // Real rows hold the model's parameters as big + small.
  int64_t row = 0;
  for (int s = 0; s < model->num_states(); ++s) {
    for (int g = 0; g < (model->num_gaussians_in_state(s) + 7) / 8 * 8; ++g, ++row) {
      if (g >= model->num_gaussians_in_state(s)) {
        EXPECT_LT(layout.big[row * layout.cols], -1e29f);
        continue;
      }
      const float* want = model->params().row(model->state_offsets()[s] + g);
      for (int c = 0; c < model->param_cols(); ++c) {
        const double got = double{layout.big[row * layout.cols + c]} + layout.small[row * layout.cols + c];
        ASSERT_NEAR(got, want[c], std::abs(want[c]) * 0x1.0p-21) << "state " << s << " row " << g << " col " << c;
      }
    }
  }
}

}  // namespace
}  // namespace gmmscore
