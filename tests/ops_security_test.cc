// TLS and mutual TLS with certificates made at test time (openssl CLI,
// tests/ops_make_certs.sh): a TLS client gets answers; a plaintext client,
// a client trusting another CA, and (mTLS) clients with no certificate, an
// expired one or one from another CA are refused; TLS files that are missing
// or half-given stop the start with a clear error naming no key material.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/wire_convert.h"
#include "tests/ops_test_util.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

class OpsSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/gmmscore_certs_XXXXXX";
    dir_ = new std::string(mkdtemp(pattern));
    const std::string command = absl::StrCat(GMMSCORE_MAKE_CERTS, " ", *dir_);
    ok_ = std::system(command.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
  }
  void SetUp() override {
    if (!ok_) GTEST_SKIP() << "openssl could not make test certificates";
  }
  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  std::unique_ptr<TestDaemon> StartTls(bool mutual) {
    DaemonOptions options;
    options.ops.tls = {.cert_file = File("server.pem"),
                       .key_file = File("server.key"),
                       .client_ca_file = mutual ? File("ca.pem") : ""};
    return TestDaemon::Start({{"m", {.num_states = 5, .min_gaussians = 1, .max_gaussians = 1,
                                     .dim = 4, .seed = 1}}},
                             options);
  }

  // ListModels over TLS trusting `root`, presenting `client` (name of a
  // .pem/.key pair) unless empty.
  static absl::StatusCode ListModels(const std::string& address, const std::string& root,
                                     const std::string& client) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Read(File(root));
    if (!client.empty()) {
      ssl.pem_cert_chain = Read(File(client + ".pem"));
      ssl.pem_private_key = Read(File(client + ".key"));
    }
    grpc::ChannelArguments args;
    // Dial the daemon's own 127.0.0.1 address and check the certificate
    // against "localhost": resolving "localhost" can yield ::1 first, where
    // nothing listens, and on some sandboxes that connect hangs instead of
    // being refused, turning every expected code into DEADLINE_EXCEEDED.
    args.SetSslTargetNameOverride("localhost");
    auto channel = grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
    Client connection(channel, {.call_timeout = absl::Seconds(5)});
    return connection.ListModels().status().code();
  }

  static std::string* dir_;
  static bool ok_;
};
std::string* OpsSecurityTest::dir_ = nullptr;
bool OpsSecurityTest::ok_ = false;

TEST_F(OpsSecurityTest, TlsServesTlsClientsOnly) {
  auto daemon = StartTls(/*mutual=*/false);
  ASSERT_NE(daemon, nullptr);
  const std::string address = daemon->address();
  EXPECT_EQ(ListModels(address, "ca.pem", ""), absl::StatusCode::kOk);
  // A client that trusts another CA does not accept the server.
  EXPECT_EQ(ListModels(address, "otherca.pem", ""), absl::StatusCode::kUnavailable);
  // Plaintext against TLS.
  Client plain(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
               {.call_timeout = absl::Seconds(5)});
  EXPECT_EQ(plain.ListModels().status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(OpsSecurityTest, MutualTlsRefusesMissingExpiredAndForeignClientCertificates) {
  auto daemon = StartTls(/*mutual=*/true);
  ASSERT_NE(daemon, nullptr);
  const std::string address = daemon->address();
  EXPECT_EQ(ListModels(address, "ca.pem", "client"), absl::StatusCode::kOk);
  EXPECT_EQ(ListModels(address, "ca.pem", ""), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListModels(address, "ca.pem", "expired"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListModels(address, "ca.pem", "stranger"), absl::StatusCode::kUnavailable);
}

TEST_F(OpsSecurityTest, BadTlsSettingsStopTheStartClearly) {
  TlsOptions half{.cert_file = File("server.pem")};
  EXPECT_EQ(MakeServerCredentials(half).status().code(), absl::StatusCode::kInvalidArgument);
  TlsOptions ca_only{.client_ca_file = File("ca.pem")};
  EXPECT_EQ(MakeServerCredentials(ca_only).status().code(), absl::StatusCode::kInvalidArgument);
  TlsOptions missing{.cert_file = File("server.pem"), .key_file = File("no-such.key")};
  absl::Status status = MakeServerCredentials(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("no-such.key"), std::string::npos);
  EXPECT_EQ(status.message().find("PRIVATE KEY"), std::string::npos);
}


// --scoring_token_file: every AcousticScorer RPC needs the bearer token;
// missing or wrong is UNAUTHENTICATED (never echoing what was expected),
// the right one scores; health stays open for probes.
TEST(OpsScoringTokenTest, ScoringRpcsNeedTheTokenWhenOneIsRequired) {
  const std::string token = "scoring-token-0123456789";
  DaemonOptions options;
  options.limits.required_token = token;
  auto daemon = TestDaemon::Start(
      {{"m", {.num_states = 5, .min_gaussians = 1, .max_gaussians = 1, .dim = 4, .seed = 1}}},
      options);
  ASSERT_NE(daemon, nullptr);
  const FloatMatrix frames = TestFeatures(daemon->model("m"), 3, 1);
  v1::ScoreRequest request;
  request.add_models("m");
  FeaturesToProto(frames.view(), request.mutable_features());
  v1::StreamConfig config;
  config.add_models("m");

  for (const std::string& sent : {std::string(), std::string("not-the-token-0123456789")}) {
    SCOPED_TRACE(sent.empty() ? "no token" : "wrong token");
    ClientOptions client_options;
    client_options.bearer_token = sent;
    auto client = Client::Connect(daemon->address(), client_options);
    ASSERT_TRUE(client.ok()) << client.status();
    absl::Status listed = (*client)->ListModels().status();
    EXPECT_EQ(listed.code(), absl::StatusCode::kUnauthenticated) << listed;
    EXPECT_EQ(listed.message().find(token), std::string::npos);
    EXPECT_EQ((*client)->Score(request).status().code(), absl::StatusCode::kUnauthenticated);
    auto stream = (*client)->StartStream(config);
    ASSERT_TRUE(stream.ok());
    (*stream)->Push(frames.view()).IgnoreError();  // may fail once the server refused
    EXPECT_EQ((*stream)->Finish().code(), absl::StatusCode::kUnauthenticated);
  }

  ClientOptions client_options;
  client_options.bearer_token = token;
  auto client = Client::Connect(daemon->address(), client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->ListModels().ok());
  EXPECT_TRUE((*client)->Score(request).ok());
  auto stream = (*client)->StartStream(config);
  ASSERT_TRUE((*stream)->Push(frames.view()).ok());
  EXPECT_TRUE((*stream)->Next().ok());
  EXPECT_TRUE((*stream)->Finish().ok());
  EXPECT_EQ(CheckHealth(daemon->address(), ""), "SERVING");
}

}  // namespace
}  // namespace gmmscore
