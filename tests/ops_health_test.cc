// grpc.health.v1 on gmmscored: overall, scorer and per-model statuses, their
// transitions through model load/unload, drain (NOT_SERVING while RPCs are
// still accepted, pushed to Watch streams) and shutdown; server reflection
// lists the services.
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/ops_test_util.h"

namespace gmmscore {
namespace {

constexpr SyntheticModelSpec kSmall{.num_states = 10, .min_gaussians = 2, .max_gaussians = 2,
                                    .dim = 8, .seed = 1};

TEST(OpsHealthTest, ServingOverallForTheScorerAndPerModel) {
  auto served = DirectoryDaemon::Start({{"a", kSmall}, {"b", kSmall}}, {});
  ASSERT_NE(served, nullptr);
  const std::string& address = served->daemon->address();
  EXPECT_EQ(CheckHealth(address, ""), "SERVING");
  EXPECT_EQ(CheckHealth(address, "gmmscore.v1.AcousticScorer"), "SERVING");
  EXPECT_EQ(CheckHealth(address, "a"), "SERVING");
  EXPECT_EQ(CheckHealth(address, "b"), "SERVING");
  EXPECT_EQ(CheckHealth(address, "never-served"), "rpc:NOT_FOUND");
}

// Clients on the daemon's own host (a captioning pipeline beside it) may use
// a unix socket: no TCP stack between them.
TEST(OpsHealthTest, AUnixSocketServesAndIsReportedAsGiven) {
  std::string socket = absl::StrCat("unix:", ::testing::TempDir(), "gmmscored-", getpid(), ".sock");
  if (socket.size() > 5 + 107) socket = absl::StrCat("unix:/tmp/gmmscored-", getpid(), ".sock");  // a long $TMPDIR
  DaemonOptions options;
  options.listen_address = socket;
  auto served = DirectoryDaemon::Start({{"a", kSmall}}, options);
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->daemon->address(), socket);
  EXPECT_EQ(CheckHealth(socket, "a"), "SERVING");
}

TEST(OpsHealthTest, ModelEntriesFollowLoadAndUnload) {
  auto served =
      DirectoryDaemon::Start({{"a", kSmall}, {"b", kSmall}, {"c", kSmall}}, {},
                             {.skip_at_start = {"c"}});
  ASSERT_NE(served, nullptr);
  const std::string& address = served->daemon->address();
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  EXPECT_EQ(CheckHealth(address, "c"), "rpc:NOT_FOUND");
  ASSERT_TRUE(AdminLoad(channel, "c").ok());
  EXPECT_EQ(CheckHealth(address, "c"), "SERVING");
  ASSERT_TRUE(AdminUnload(channel, "b").ok());
  EXPECT_EQ(CheckHealth(address, "b"), "NOT_SERVING");
  EXPECT_EQ(CheckHealth(address, ""), "SERVING");
  // A load that fails leaves no entry behind (adversarial_test has more).
  EXPECT_EQ(AdminLoad(channel, "missing").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(CheckHealth(address, "missing"), "rpc:NOT_FOUND");
}

TEST(OpsHealthTest, DrainReportsNotServingBeforeThePortCloses) {
  DaemonOptions options;
  // Generous: the checks below must fall within it even on a loaded,
  // sanitized 2-core machine (800 ms was missed there).
  options.ops.drain_grace = absl::Seconds(5);
  auto served = DirectoryDaemon::Start({{"a", kSmall}}, options);
  ASSERT_NE(served, nullptr);
  const std::string address = served->daemon->address();

  // A Watch opened before the drain sees SERVING, then NOT_SERVING.
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext watch_context;
  grpc::health::v1::HealthCheckRequest request;
  auto watch = stub->Watch(&watch_context, request);
  grpc::health::v1::HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  std::thread drainer([&] { served->daemon->Drain(absl::Seconds(5)); });
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  // Within the grace period the port still answers, with NOT_SERVING.
  EXPECT_EQ(CheckHealth(address, ""), "NOT_SERVING");
  EXPECT_EQ(CheckHealth(address, "a"), "NOT_SERVING");
  drainer.join();
  watch_context.TryCancel();
  // Shut down: nothing answers.
  EXPECT_EQ(CheckHealth(address, "").rfind("rpc:", 0), 0u);
}

TEST(OpsHealthTest, ReflectionListsTheServices) {
  auto served = DirectoryDaemon::Start({{"a", kSmall}}, {});
  ASSERT_NE(served, nullptr);
  auto channel =
      grpc::CreateChannel(served->daemon->address(), grpc::InsecureChannelCredentials());
  // ServerReflectionRequest{list_services: ""} by hand (field 7, length 0),
  // so the test needs no reflection stubs.
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto call = stub.PrepareCall(&context,
                               "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                               &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  const char request_bytes[] = {0x3a, 0x00};
  grpc::Slice slice(request_bytes, sizeof(request_bytes));
  grpc::ByteBuffer request(&slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(reply.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("gmmscore.v1.AcousticScorer"), std::string::npos);
  EXPECT_NE(bytes.find("gmmscore.v1.ModelAdmin"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  context.TryCancel();
  grpc::Status finish;
  call->Finish(&finish, reinterpret_cast<void*>(4));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace gmmscore
