// The project's version (CMakeLists.txt project(VERSION)), which every
// binary prints with --version: one place, so that a deployed daemon, its
// CLI and its load generator can be matched.
//
//   std::puts(VersionLine("gmmscored").c_str());   // "gmmscored 0.9.0 (release)"
#ifndef GMMSCORE_KERNELS_CORE_VERSION_H_
#define GMMSCORE_KERNELS_CORE_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gmmscore {

// "0.9.0".
const char* GmmscoreVersion();

// "<program> <version> (<build type>[, CUDA])", no newline.
std::string VersionLine(absl::string_view program);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CORE_VERSION_H_
