// Small Status helpers that Debian's Abseil (20220623) does not ship.
//
//   GMM_RETURN_IF_ERROR(WriteHeader(out));
//   GMM_ASSIGN_OR_RETURN(DiagGmmModel model, LoadModel(path));
//   return PrefixStatus(absl::StrCat("model file '", path, "'"), status);
#ifndef GMMSCORE_KERNELS_CORE_STATUS_MACROS_H_
#define GMMSCORE_KERNELS_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

// `status` with "prefix: " before its message and the same code (OK stays
// OK): where an error happened, added on its way up.
inline absl::Status PrefixStatus(absl::string_view prefix, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, ": ", status.message()));
}

}  // namespace gmmscore

#define GMM_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::absl::Status gmm_status_ = (expr);           \
    if (!gmm_status_.ok()) return gmm_status_;     \
  } while (0)

#define GMM_STATUS_CONCAT_INNER_(a, b) a##b
#define GMM_STATUS_CONCAT_(a, b) GMM_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (a StatusOr); on error returns its status, otherwise moves
// the value into `lhs`, which may be a declaration.
#define GMM_ASSIGN_OR_RETURN(lhs, rexpr) \
  GMM_ASSIGN_OR_RETURN_IMPL_(GMM_STATUS_CONCAT_(gmm_statusor_, __LINE__), lhs, rexpr)

#define GMM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // GMMSCORE_KERNELS_CORE_STATUS_MACROS_H_
