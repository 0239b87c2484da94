// Helpers shared by the kernels/io tests: scratch files and fixtures.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_TEST_UTIL_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace gmmscore::io_testing {

// A path in the test's scratch directory, unique to the running test.
inline std::string TempPath(absl::string_view name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return absl::StrCat(::testing::TempDir(), "/gmm_io_", info->test_suite_name(), "_", info->name(),
                      "_", name);
}

inline void WriteFile(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

inline std::string TestData(absl::string_view name) {
  return absl::StrCat(GMMSCORE_IO_TESTDATA, "/", name);
}

}  // namespace gmmscore::io_testing

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_TEST_UTIL_H_
