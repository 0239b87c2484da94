#include "kernels/core/version.h"

#include "absl/strings/str_cat.h"

namespace gmmscore {

const char* GmmscoreVersion() { return GMMSCORE_VERSION; }

std::string VersionLine(absl::string_view program) {
#ifdef NDEBUG
  constexpr absl::string_view kBuild = "release";
#else
  constexpr absl::string_view kBuild = "debug";
#endif
#ifdef GMMSCORE_WITH_CUDA
  constexpr absl::string_view kCuda = ", CUDA";
#else
  constexpr absl::string_view kCuda = "";
#endif
  return absl::StrCat(program, " ", GMMSCORE_VERSION, " (", kBuild, kCuda, ")");
}

}  // namespace gmmscore
