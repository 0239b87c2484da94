#include "kernels/cpu/blas_core.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

extern "C" char* openblas_get_corename(void);

namespace gmmscore {
namespace {

// OpenBLAS's x86 cores that predate AVX2 (its corename table). A core not
// listed, older or newer, draws no warning: a name this list does not know
// is more likely a newer core than a slow one.
constexpr absl::string_view kCoresBeforeAvx2[] = {
    "unknown",   "katmai",  "coppermine", "northwood",   "prescott",  "banias",
    "atom",      "core2",   "penryn",     "dunnington",  "nehalem",   "athlon",
    "opteron",   "opteron_sse3", "barcelona", "nano",    "sandybridge", "bobcat",
    "bulldozer", "piledriver", "steamroller"};

bool PredatesAvx2(absl::string_view core) {
  const std::string lower = absl::AsciiStrToLower(core);
  for (absl::string_view old : kCoresBeforeAvx2) {
    if (lower == old) return true;
  }
  return false;
}

}  // namespace

std::string BlasCoreName() {
  const char* name = openblas_get_corename();
  return name == nullptr ? "" : name;
}

std::string AvailableBlasCoreType() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

std::string BlasCoreWarning() {
  return BlasCoreWarningFor(BlasCoreName(), AvailableBlasCoreType(),
                            std::getenv("OPENBLAS_CORETYPE") != nullptr);
}

std::string BlasCoreWarningFor(absl::string_view core, absl::string_view available_core_type,
                               bool core_type_set) {
  if (core_type_set || available_core_type.empty() || !PredatesAvx2(core)) return "";
  return absl::StrCat("OpenBLAS runs its ", core,
                      " kernels (it does not know this CPU's model), though the CPU runs ",
                      available_core_type,
                      "'s: CPU scoring is about 2x slower so. Start the process with "
                      "OPENBLAS_CORETYPE=",
                      available_core_type, " in its environment.");
}

}  // namespace gmmscore
