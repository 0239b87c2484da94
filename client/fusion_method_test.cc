#include "client/fusion_method.h"

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(FusionMethodTest, BothToolsSpellingsNameTheSameMethod) {
  EXPECT_EQ(*FusionMethodFor("max"), v1::FUSION_METHOD_MAX);
  EXPECT_EQ(*FusionMethodFor("logsumexp"), v1::FUSION_METHOD_LOG_SUM_EXP);    // gmmscore stream's
  EXPECT_EQ(*FusionMethodFor("log_sum_exp"), v1::FUSION_METHOD_LOG_SUM_EXP);  // gmmscore-load's
  EXPECT_EQ(*FusionMethodFor("posterior"), v1::FUSION_METHOD_POSTERIOR);
  for (const char* bad : {"", "sum", "LogSumExp", "max "}) {
    absl::StatusOr<v1::FusionMethod> method = FusionMethodFor(bad);
    EXPECT_EQ(method.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(method.status().message().find("--fusion"), std::string::npos);
  }
}

}  // namespace
}  // namespace gmmscore
