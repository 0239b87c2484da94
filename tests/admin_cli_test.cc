// `gmmscore admin list|load|replace|unload` (the built binary) against an
// in-process daemon serving a model directory with an admin token: each
// action does what it says and the server agrees (GetModelStatus, health);
// a missing or wrong token, an unknown model and a replace of a model not
// served fail with exit 1 and a clear line; missing --name or action is a
// usage error (exit 2).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/ops_test_util.h"

namespace gmmscore {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Temp(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/admin_cli_test_", getpid(), "_", name);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

RunResult RunCli(const std::vector<std::string>& args) {
  const std::string out = Temp("stdout"), err = Temp("stderr");
  std::string command = GMMSCORE_CLI;
  for (const std::string& a : args) absl::StrAppend(&command, " '", a, "'");
  absl::StrAppend(&command, " >", out, " 2>", err);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
}

constexpr char kToken[] = "admin-cli-token-0123456789";

class AdminCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DaemonOptions options;
    options.ops.admin_token = kToken;
    const SyntheticModelSpec spec = {.num_states = 8, .min_gaussians = 1, .max_gaussians = 2,
                                     .dim = 5, .seed = 1};
    served_ = DirectoryDaemon::Start({{"a", spec}, {"b", spec}}, options,
                                     {.skip_at_start = {"b"}});
    ASSERT_NE(served_, nullptr);
    token_file_ = Temp("token");
    std::ofstream(token_file_) << kToken << "\n";
  }
  void TearDown() override { std::remove(token_file_.c_str()); }

  // Runs `gmmscore admin ACTION --server ... --token_file ... extra`.
  RunResult Admin(const std::string& action, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"admin", action, "--server=" + served_->daemon->address(),
                                     "--token_file=" + token_file_};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  }

  std::unique_ptr<DirectoryDaemon> served_;
  std::string token_file_;
};

TEST_F(AdminCliTest, ListLoadReplaceUnload) {
  RunResult list = Admin("list");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("NAME"));
  EXPECT_THAT(list.out, HasSubstr("\na "));
  EXPECT_THAT(list.out, Not(HasSubstr("\nb ")));
  EXPECT_THAT(list.out, HasSubstr("budget: none"));

  RunResult load = Admin("load", {"--name=b"});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_THAT(load.out, HasSubstr("loaded: b version 1 from "));
  EXPECT_EQ(CheckHealth(served_->daemon->address(), "b"), "SERVING");

  RunResult replace = Admin("replace", {"--name=a"});
  ASSERT_EQ(replace.exit_code, 0) << replace.err;
  EXPECT_THAT(replace.out, HasSubstr("replaced: a version 2 from "));
  absl::StatusOr<std::shared_ptr<const ServedModel>> a = served_->daemon->repository().Find("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->version, 2u);

  RunResult unload = Admin("unload", {"--name=b"});
  ASSERT_EQ(unload.exit_code, 0) << unload.err;
  EXPECT_THAT(unload.out, HasSubstr("unloaded: b"));
  EXPECT_EQ(served_->daemon->repository().Find("b").status().code(),
            absl::StatusCode::kNotFound);
  list = Admin("list");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("\na "));
  EXPECT_THAT(list.out, Not(HasSubstr("\nb ")));
}

TEST_F(AdminCliTest, FailuresSayWhy) {
  // Replace needs a served model; load needs a file.
  RunResult replace = Admin("replace", {"--name=b"});
  EXPECT_EQ(replace.exit_code, 1);
  EXPECT_THAT(replace.err, HasSubstr("'b' is not served"));
  RunResult unknown = Admin("load", {"--name=nope"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("nope"));

  // No token, a wrong token.
  RunResult bare = RunCli({"admin", "list", "--server=" + served_->daemon->address()});
  EXPECT_EQ(bare.exit_code, 1);
  EXPECT_THAT(bare.err, HasSubstr("bearer token"));
  const std::string wrong = Temp("wrong_token");
  std::ofstream(wrong) << "not-the-admin-token-0123\n";
  RunResult wrong_run = RunCli(
      {"admin", "load", "--name=b", "--server=" + served_->daemon->address(), "--token_file=" + wrong});
  std::remove(wrong.c_str());
  EXPECT_EQ(wrong_run.exit_code, 1);
  EXPECT_THAT(wrong_run.err, HasSubstr("not valid"));
  EXPECT_THAT(wrong_run.err, Not(HasSubstr(kToken)));
  EXPECT_EQ(served_->daemon->repository().Find("b").status().code(),
            absl::StatusCode::kNotFound);

  // Usage errors.
  EXPECT_EQ(Admin("load").exit_code, 2);
  RunResult no_action = RunCli({"admin"});
  EXPECT_EQ(no_action.exit_code, 2);
  EXPECT_THAT(no_action.err, HasSubstr("list, load, replace, unload"));
  RunResult half_tls = Admin("list", {"--tls_cert=/nonexistent.pem"});
  EXPECT_EQ(half_tls.exit_code, 2);
  EXPECT_THAT(half_tls.err, HasSubstr("--tls_cert and --tls_key go together"));
}

}  // namespace
}  // namespace gmmscore
