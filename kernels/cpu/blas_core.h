// Which kernels OpenBLAS runs on this CPU, and a warning when they are its
// generic ones on a CPU that could run much faster ones.
//
// OpenBLAS builds with DYNAMIC_ARCH (Debian's) pick their kernels by CPU
// model when the library loads. A release that does not know the model falls
// back to "Prescott", its SSE3 kernels, even where AVX2 works: Debian 12's
// 0.3.21 did so on the H200 hosts of 2026-11-28, and the CPU backend scores
// 2.2x slower on them (docs/PERFORMANCE.md, stop 49). The choice is made
// before main and cannot be changed afterwards; the environment variable
// OPENBLAS_CORETYPE, set before the process starts, overrides it.
//
//   if (std::string warning = BlasCoreWarning(); !warning.empty()) {
//     LogWarning("%s", warning);
//   }
#ifndef GMMSCORE_KERNELS_CPU_BLAS_CORE_H_
#define GMMSCORE_KERNELS_CPU_BLAS_CORE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gmmscore {

// The kernels OpenBLAS runs, as it names them ("Haswell", "Prescott", ...).
std::string BlasCoreName();

// The OPENBLAS_CORETYPE this CPU can run with AVX2 and FMA: "Haswell", or ""
// on a CPU without them.
std::string AvailableBlasCoreType();

// Empty unless OpenBLAS runs kernels older than AVX2 on a CPU that has it;
// then one sentence for the log that names the variable to set. Also empty
// when OPENBLAS_CORETYPE is set (the operator chose).
std::string BlasCoreWarning();

// BlasCoreWarning from given facts.
std::string BlasCoreWarningFor(absl::string_view core, absl::string_view available_core_type,
                               bool core_type_set);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_CPU_BLAS_CORE_H_
