// Running the built gmmscore binary from a test: temporary paths per test,
// the command's exit code, standard output and standard error. The test
// target defines GMMSCORE_CLI_BINARY (the binary's path).
//
//   RunResult run = Gmmscore({"info", "--model", path});
//   ASSERT_EQ(run.exit_code, 0) << run.err;
//   ExpectOneLineError(Gmmscore({"info"}), 2, "--model");
#ifndef GMMSCORE_CLIENT_CLI_CLI_TEST_UTIL_H_
#define GMMSCORE_CLIENT_CLI_CLI_TEST_UTIL_H_

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gmmscore {

// A path in the test temporary directory, unique to the running test.
inline std::string Temp(absl::string_view name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return absl::StrCat(::testing::TempDir(), "/gmmscore_", info->test_suite_name(), "_", info->name(), "_", name);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Quote(const std::string& arg) {
  return absl::StrCat("'", absl::StrReplaceAll(arg, {{"'", "'\\''"}}), "'");
}

// Runs gmmscore with `args`; `stdin_path` (if any) becomes standard input.
inline RunResult Gmmscore(const std::vector<std::string>& args, const std::string& stdin_path = "") {
  std::vector<std::string> quoted;
  for (const std::string& arg : args) quoted.push_back(Quote(arg));
  const std::string out = Temp("stdout"), err = Temp("stderr");
  std::string command = absl::StrCat(GMMSCORE_CLI_BINARY, " ", absl::StrJoin(quoted, " "), " >", Quote(out),
                                     " 2>", Quote(err));
  if (!stdin_path.empty()) absl::StrAppend(&command, " <", Quote(stdin_path));
  const int raw = std::system(command.c_str());
  RunResult run;
  run.exit_code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = ReadFile(out);
  run.err = ReadFile(err);
  return run;
}

// An error run: the exit code and exactly one "gmmscore: error:" line.
inline void ExpectOneLineError(const RunResult& run, int exit_code, absl::string_view mentions) {
  EXPECT_EQ(run.exit_code, exit_code) << run.err;
  EXPECT_THAT(run.err, ::testing::StartsWith("gmmscore: error: "));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_THAT(run.err, ::testing::HasSubstr(std::string(mentions)));
}

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_CLI_CLI_TEST_UTIL_H_
