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
  const std::string address = absl::StrCat("localhost:", daemon->daemon().port());
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
  const std::string address = absl::StrCat("localhost:", daemon->daemon().port());
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

}  // namespace
}  // namespace gmmscore
