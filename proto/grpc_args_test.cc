#include "proto/grpc_args.h"

#include <string>

#include "gmock/gmock.h"
#include "grpc/grpc.h"
#include "gtest/gtest.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;

// The first value given for `name` in *args, as a string ("int:N" or
// "string:S"), or "" when it is absent.
std::string Seen(const grpc::ChannelArguments& args, const std::string& name) {
  const grpc_channel_args c = args.c_channel_args();
  for (size_t i = 0; i < c.num_args; ++i) {
    if (name != c.args[i].key) continue;
    if (c.args[i].type == GRPC_ARG_INTEGER) return "int:" + std::to_string(c.args[i].value.integer);
    if (c.args[i].type == GRPC_ARG_STRING) return std::string("string:") + c.args[i].value.string;
  }
  return "";
}

TEST(GrpcArgsTest, WholeNumbersAreIntegersAndTheRestStrings) {
  absl::StatusOr<std::vector<GrpcArg>> parsed = ParseGrpcArgs(
      {"grpc.http2.lookahead_bytes=4194304", "grpc.http2.bdp_probe=0", "grpc.test_string=a=b",
       "grpc.x=-7", "grpc.y=on"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  grpc::ChannelArguments args;
  ApplyGrpcArgs(*parsed, &args);
  EXPECT_EQ(Seen(args, "grpc.http2.lookahead_bytes"), "int:4194304");
  EXPECT_EQ(Seen(args, "grpc.http2.bdp_probe"), "int:0");
  EXPECT_EQ(Seen(args, "grpc.test_string"), "string:a=b");  // split at the first '='
  EXPECT_EQ(Seen(args, "grpc.x"), "int:-7");
  EXPECT_EQ(Seen(args, "grpc.y"), "string:on");
}

TEST(GrpcArgsTest, NothingGivenChangesNothing) {
  absl::StatusOr<std::vector<GrpcArg>> parsed = ParseGrpcArgs({});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->empty());
}

TEST(GrpcArgsTest, ASpecThatIsNotNameEqualsValueIsRefusedByName) {
  for (const std::string bad : {"grpc.http2.lookahead_bytes", "grpc.http2.lookahead_bytes=", "=5",
                                "grcp.http2.lookahead_bytes=5", "lookahead_bytes=5", "grpc.=5", "",
                                "grpc.x =5", "grpc.http2.lookahead_bytes=99999999999"}) {
    absl::StatusOr<std::vector<GrpcArg>> parsed = ParseGrpcArgs({"grpc.ok=1", bad});
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("'" + bad + "'"));
  }
}

TEST(GrpcArgsTest, AServerBuilderTakesThemWithoutComplaint) {
  absl::StatusOr<std::vector<GrpcArg>> parsed =
      ParseGrpcArgs({"grpc.http2.max_frame_size=1048576", "grpc.some_string=s"});
  ASSERT_TRUE(parsed.ok());
  grpc::ServerBuilder builder;
  ApplyGrpcArgs(*parsed, &builder);  // checked end to end by the daemon's tests
}

}  // namespace
}  // namespace gmmscore
