#include "proto/rpc_status.h"

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(RpcStatusTest, EveryCanonicalCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status status(static_cast<absl::StatusCode>(code), code == 0 ? "" : "why");
    grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(ToAbslStatus(wire), status);
  }
}

TEST(RpcStatusTest, KeepsTheMessage) {
  grpc::Status wire = ToGrpcStatus(absl::NotFoundError("no model 'x'"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(wire.error_message(), "no model 'x'");
}

}  // namespace
}  // namespace gmmscore
