// The binary16 tensor-core layout on the CPU: scales are powers of two, the
// scaled model stays inside binary16 with room, big + small times the scale
// reproduces every u and v to the split's ~22 bits, and K stays float32.
#include "kernels/cuda/half_tc_layout.h"

#include <cuda_fp16.h>

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/fused_layout.h"
#include "kernels/cuda/wide_range_model.h"
#include "kernels/model/synthetic_model.h"

namespace gmmscore {
namespace {

float HalfValue(uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

void ExpectLayoutReproducesModel(const DiagGmmModel& model) {
  const TensorCoreLayout rows = BuildTensorCoreLayout(model);
  const HalfTensorCoreLayout layout = BuildHalfTensorCoreLayout(model, rows);
  const int dim = model.dim();
  ASSERT_EQ(layout.cols % HalfTensorCoreLayout::kStep, 0);
  ASSERT_GE(layout.cols, 2 * dim);
  ASSERT_LT(layout.cols, 2 * dim + HalfTensorCoreLayout::kStep);
  ASSERT_EQ(static_cast<int>(layout.frame_scale.size()), layout.cols);
  for (int k = 0; k < layout.cols; ++k) {
    if (k >= 2 * dim) {
      EXPECT_EQ(layout.frame_scale[k], 0.0f) << k;
      continue;
    }
    bool zero_column = true;
    for (int64_t g = 0; g < model.num_gaussians() && zero_column; ++g) {
      zero_column = model.params().row(g)[1 + k] == 0.0f;
    }
    if (zero_column) {
      EXPECT_EQ(layout.frame_scale[k], 0.0f) << "column " << k << " is zero in every row";
      continue;
    }
    int exponent = 0;
    EXPECT_EQ(std::frexp(layout.frame_scale[k], &exponent), 0.5f) << "column " << k << " is not a power of two";
  }
  const int64_t stored = rows.rows + TensorCoreLayout::kChunkRows;
  ASSERT_EQ(static_cast<int64_t>(layout.big.size()), stored * layout.cols);
  ASSERT_EQ(static_cast<int64_t>(layout.gconst.size()), stored);
  for (int64_t r = 0; r < stored; ++r) {
    const int64_t g = r < rows.rows ? rows.row_gaussian[r] : -1;
    if (g < 0) {
      EXPECT_EQ(layout.gconst[r], r < rows.rows ? kPaddingGconst : 0.0f) << "row " << r;
      for (int k = 0; k < layout.cols; ++k) {
        ASSERT_EQ(layout.big[r * layout.cols + k], 0) << "row " << r;
        ASSERT_EQ(layout.small[r * layout.cols + k], 0) << "row " << r;
      }
      continue;
    }
    const float* want = model.params().row(g);
    ASSERT_EQ(layout.gconst[r], want[0]) << "K is kept exactly, row " << r;
    for (int k = 0; k < 2 * dim; ++k) {
      const float big = HalfValue(layout.big[r * layout.cols + k]);
      const float small = HalfValue(layout.small[r * layout.cols + k]);
      ASSERT_LE(std::abs(big), HalfTensorCoreLayout::kLargestScaled) << "row " << r << " col " << k;
      const double scale = layout.frame_scale[k];
      const double got = (double{big} + small) * scale;
      // The split's 22 bits, or binary16's smallest step when the rest is
      // subnormal: 2^-24 of the scaled unit.
      const double tolerance = std::abs(want[1 + k]) * 0x1.0p-21 + 0x1.0p-24 * scale;
      ASSERT_NEAR(got, want[1 + k], tolerance) << "row " << r << " col " << k;
    }
  }
}

TEST(HalfTensorCoreLayoutTest, SyntheticModelIsReproduced) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  auto model = GenerateSyntheticModel({.num_states = 200, .min_gaussians = 1, .max_gaussians = 40, .dim = 39,
                                       .seed = seed});
  ASSERT_TRUE(model.ok());
  ExpectLayoutReproducesModel(*model);
}

// One Gaussian is its own centre: every u is zero, and those columns take
// no frame values (a large one would otherwise scale its whole frame down).
TEST(HalfTensorCoreLayoutTest, ColumnsZeroInEveryRowTakeNoFrameValues) {
  auto model = GenerateSyntheticModel({.num_states = 1, .min_gaussians = 1, .max_gaussians = 1, .dim = 13, .seed = 3});
  ASSERT_TRUE(model.ok());
  ExpectLayoutReproducesModel(*model);
  const HalfTensorCoreLayout layout = BuildHalfTensorCoreLayout(*model, BuildTensorCoreLayout(*model));
  for (int k = 0; k < 13; ++k) EXPECT_EQ(layout.frame_scale[k], 0.0f) << "u column " << k;
  for (int k = 13; k < 26; ++k) EXPECT_GT(layout.frame_scale[k], 0.0f) << "v column " << k;
}

TEST(HalfTensorCoreLayoutTest, ParametersPastBinary16RangeAreScaledIntoIt) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  auto wide = WideRangeModel(60, 25, seed);
  ASSERT_TRUE(wide.ok()) << wide.status();
  const DiagGmmModel& model = *wide;
  ExpectLayoutReproducesModel(model);
  // The scales follow the dimensions' spans: frames of the narrowest
  // dimension (1e-4: y^2 ~ 1e-8 against v ~ 5e7) are scaled up and those of
  // the widest (1e4: y^2 ~ 1e8 against v ~ 5e-9) down, about 2^51 apart.
  const HalfTensorCoreLayout layout = BuildHalfTensorCoreLayout(model, BuildTensorCoreLayout(model));
  EXPECT_GT(layout.frame_scale[25 + 0], 0x1.0p20f);
  EXPECT_LT(layout.frame_scale[25 + 8], 0x1.0p-20f);
}

}  // namespace
}  // namespace gmmscore
