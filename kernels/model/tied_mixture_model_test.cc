#include "kernels/model/tied_mixture_model.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Two streams of dims 2 and 1, one codebook of 2 and 1 Gaussians.
TiedMixtureModelBuilder TwoStreamBuilder() {
  TiedMixtureModelBuilder builder({{0, 2}, {2, 1}});
  const std::vector<double> means0 = {0.0, 1.0, 2.0, -1.0}, vars0 = {1.0, 2.0, 0.5, 1.0};
  const std::vector<double> means1 = {3.0}, vars1 = {4.0};
  const CodebookStreamParams streams[] = {{means0, vars0}, {means1, vars1}};
  EXPECT_TRUE(builder.AddCodebook(streams).ok());
  return builder;
}

TEST(TiedMixtureModelTest, BuildsScoringFormAndRecoversNaturalParameters) {
  TiedMixtureModelBuilder builder = TwoStreamBuilder();
  const std::vector<double> w0 = {std::log(0.25), std::log(0.75)}, w1 = {0.0};
  const absl::Span<const double> weights[] = {w0, w1};
  ASSERT_TRUE(builder.AddState(0, weights).ok());
  ASSERT_TRUE(builder.AddState(0, weights).ok());
  absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->dim(), 3);
  EXPECT_EQ(model->num_streams(), 2);
  EXPECT_EQ(model->num_codebooks(), 1);
  EXPECT_EQ(model->num_states(), 2);
  EXPECT_EQ(model->total_gaussians(), 3);
  EXPECT_EQ(model->codebook_size(0, 0), 2);
  const NaturalGaussian g1 = model->Natural(0, 1);
  EXPECT_NEAR(g1.mean[0], 2.0, 1e-6);
  EXPECT_NEAR(g1.mean[1], -1.0, 1e-6);
  EXPECT_NEAR(g1.variance[0], 0.5, 1e-6);
  EXPECT_NEAR(model->log_weights(1, 0)[1], std::log(0.75), 1e-7);
  // Two states share one codebook: the tied form stores it once.
  EXPECT_LT(model->ByteSize(), model->UntiedByteSize() + 200);
  EXPECT_EQ(model->ToDiagGmmModel().status().code(), absl::StatusCode::kUnimplemented);
}

TEST(TiedMixtureModelTest, SingleStreamConvertsToDiagGmmModel) {
  TiedMixtureModelBuilder builder({{0, 2}});
  const std::vector<double> means = {0.0, 1.0, 2.0, -1.0, 5.0, 5.0}, vars = {1, 2, 0.5, 1, 3, 3};
  const CodebookStreamParams streams[] = {{means, vars}};
  ASSERT_TRUE(builder.AddCodebook(streams).ok());
  const std::vector<double> w = {std::log(0.5), kNegInf, std::log(0.5)};
  const absl::Span<const double> weights[] = {w};
  ASSERT_TRUE(builder.AddState(0, weights).ok());
  absl::StatusOr<TiedMixtureModel> model = std::move(builder).Build();
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<DiagGmmModel> diag = model->ToDiagGmmModel();
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_EQ(diag->num_gaussians(), 2);  // the weight-0 Gaussian is dropped
  EXPECT_NEAR(diag->Natural(1).mean[0], 5.0, 1e-5);
  EXPECT_NEAR(diag->Natural(1).weight, 0.5, 1e-6);
}

TEST(TiedMixtureModelTest, RejectsBadInputWithLocation) {
  TiedMixtureModelBuilder builder = TwoStreamBuilder();
  const std::vector<double> short_w = {0.0}, w1 = {0.0};
  const absl::Span<const double> bad_count[] = {short_w, w1};
  EXPECT_THAT(builder.AddState(0, bad_count).message(), HasSubstr("state 0, stream 0: 1 weights"));
  const absl::Span<const double> no_codebook[] = {short_w, w1};
  EXPECT_THAT(builder.AddState(3, no_codebook).message(), HasSubstr("codebook 3 does not exist"));
  const std::vector<double> positive = {0.5, -1.0};
  const absl::Span<const double> too_big[] = {positive, w1};
  EXPECT_THAT(builder.AddState(0, too_big).message(), HasSubstr("not the log of a probability"));
  const std::vector<double> zeros = {kNegInf, kNegInf};
  const absl::Span<const double> all_zero[] = {zeros, w1};
  EXPECT_THAT(builder.AddState(0, all_zero).message(), HasSubstr("every weight is 0"));

  const std::vector<double> means = {0.0, 0.0}, bad_vars = {1.0, 0.0};
  const std::vector<double> means1 = {3.0}, vars1 = {4.0};
  const CodebookStreamParams bad[] = {{means, bad_vars}, {means1, vars1}};
  EXPECT_THAT(builder.AddCodebook(bad).status().message(),
              HasSubstr("codebook 1, stream 0, Gaussian 0: variance of dimension 1"));

  TiedMixtureModelBuilder gaps({{0, 2}, {3, 1}});
  EXPECT_THAT(std::move(gaps).Build().status().message(), HasSubstr("must tile"));
  TiedMixtureModelBuilder empty = TwoStreamBuilder();
  EXPECT_THAT(std::move(empty).Build().status().message(), HasSubstr("no states"));
}

}  // namespace
}  // namespace gmmscore
