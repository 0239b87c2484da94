// Shared by the fuzz targets: the bytes as a string, and a check that a
// failure still names the input (every parser promises that).
#ifndef GMMSCORE_TESTS_FUZZ_FUZZ_UTIL_H_
#define GMMSCORE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"

namespace gmmscore::fuzz {

// The name every target gives its input; errors must mention it.
inline constexpr char kInputName[] = "fuzz-input";

inline std::string Bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Aborts (a finding) when a failed parse does not name its input.
inline void CheckNamesInput(const absl::Status& status) {
  if (status.ok()) return;
  if (std::string(status.message()).find(kInputName) == std::string::npos) {
    std::fprintf(stderr, "error without the input's name: %s\n", status.ToString().c_str());
    std::abort();
  }
}

}  // namespace gmmscore::fuzz

#endif  // GMMSCORE_TESTS_FUZZ_FUZZ_UTIL_H_
