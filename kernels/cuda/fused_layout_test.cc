// Checks the fused layout on the CPU (so CI proves it without a GPU): a host
// emulation reads the layout exactly as FusedLoglikKernel does and must
// reproduce the float64 reference.
#include "kernels/cuda/fused_layout.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/model/synthetic_model.h"
#include "kernels/score/reference_scorer.h"

namespace gmmscore {
namespace {

// The kernel's indexing, in double, one frame at a time.
FloatMatrix EmulateFusedKernel(const FusedLayout& layout, const DiagGmmModel& model,
                               const FloatMatrix& features) {
  const int lanes = layout.states_per_block;
  FloatMatrix out(features.rows(), model.num_states(), NAN);
  std::vector<double> y(layout.dim4 * 4);
  for (int64_t t = 0; t < features.rows(); ++t) {
    std::fill(y.begin(), y.end(), 0.0);
    for (int d = 0; d < layout.dim; ++d) y[d] = features.at(t, d) - model.center()[d];
    for (int b = 0; b < layout.num_blocks; ++b) {
      for (int lane = 0; lane < lanes; ++lane) {
        double max = -INFINITY, sum = 0.0;
        for (int g = 0; g < layout.block_gaussians[b]; ++g) {
          double acc = 0.0;
          for (int q = 0; q < layout.dim4; ++q) {
            const int64_t base = layout.block_ab_offset[b] + ((int64_t{g} * layout.dim4 + q) * 2) * lanes + lane;
            const Float4 a4 = layout.ab[base], b4 = layout.ab[base + lanes];
            const double a[4] = {a4.x, a4.y, a4.z, a4.w}, b_stored[4] = {b4.x, b4.y, b4.z, b4.w};
            for (int i = 0; i < 4; ++i) {
              const double z = a[i] * y[4 * q + i] + b_stored[BComponent(i)];
              acc -= z * z;
            }
          }
          const double a = acc + layout.gconsts[layout.block_gconst_offset[b] + int64_t{g} * lanes + lane];
          const double larger = std::max(a, max);
          sum = sum * std::exp(max - larger) + std::exp(a - larger);
          max = larger;
        }
        const int state = layout.slot_state[b * lanes + lane];
        if (state >= 0) out.at(t, state) = static_cast<float>(max + std::log(sum));
      }
    }
  }
  return out;
}

struct Shape {
  int states, min_gaussians, max_gaussians, dim;
};

class FusedLayoutTest : public ::testing::TestWithParam<Shape> {};

TEST_P(FusedLayoutTest, EmulatedKernelMatchesReference) {
  const Shape shape = GetParam();
  auto model = GenerateSyntheticModel({.num_states = shape.states, .min_gaussians = shape.min_gaussians,
                                       .max_gaussians = shape.max_gaussians, .dim = shape.dim,
                                       .seed = static_cast<uint64_t>(shape.states * 31 + shape.dim)});
  ASSERT_TRUE(model.ok()) << model.status();
  const FusedLayout layout = BuildFusedLayout(*model, 64);
  EXPECT_EQ(layout.dim4 * 4 >= shape.dim, true);
  EXPECT_EQ(layout.num_blocks, (shape.states + 63) / 64);
  // Every state appears in exactly one slot.
  std::vector<int> seen(shape.states, 0);
  for (int32_t s : layout.slot_state) {
    if (s >= 0) ++seen[s];
  }
  for (int s = 0; s < shape.states; ++s) ASSERT_EQ(seen[s], 1) << "state " << s;

  const FloatMatrix features = GenerateSyntheticFeatures(*model, 5, 77);
  const FloatMatrix emulated = EmulateFusedKernel(layout, *model, features);
  const std::vector<double> reference = ReferenceLogLikelihoods(*model, features.view());
  EXPECT_LE(MaxNormalizedError(emulated, reference), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(AwkwardShapes, FusedLayoutTest,
                         ::testing::Values(Shape{1, 1, 1, 13}, Shape{63, 3, 3, 36}, Shape{65, 1, 256, 39},
                                           Shape{130, 1, 9, 40}, Shape{200, 16, 16, 39}));

TEST(FusedLayoutTest, UniformModelKeepsNaturalStateOrder) {
  auto model = GenerateSyntheticModel({.num_states = 100, .min_gaussians = 4, .max_gaussians = 4, .dim = 13});
  ASSERT_TRUE(model.ok());
  const FusedLayout layout = BuildFusedLayout(*model, 64);
  for (int s = 0; s < 100; ++s) EXPECT_EQ(layout.slot_state[s], s);
  EXPECT_EQ(layout.slot_state[100], -1);
  EXPECT_EQ(layout.padded_gaussians(), 2 * 64 * 4);
}

TEST(FusedLayoutTest, SortingByGaussianCountBoundsPadding) {
  auto model = GenerateSyntheticModel({.num_states = 640, .min_gaussians = 1, .max_gaussians = 64, .dim = 13});
  ASSERT_TRUE(model.ok());
  const FusedLayout layout = BuildFusedLayout(*model, 64);
  // Sorted blocks waste at most one block-width step per block; unsorted
  // blocks would pad nearly every state to ~64.
  EXPECT_LT(layout.padded_gaussians(), model->num_gaussians() * 1.25);
}

}  // namespace
}  // namespace gmmscore
