#include "client/fusion_method.h"

#include "absl/strings/str_cat.h"

namespace gmmscore {

absl::StatusOr<v1::FusionMethod> FusionMethodFor(absl::string_view name) {
  if (name == "max") return v1::FUSION_METHOD_MAX;
  if (name == "logsumexp" || name == "log_sum_exp") return v1::FUSION_METHOD_LOG_SUM_EXP;
  if (name == "posterior") return v1::FUSION_METHOD_POSTERIOR;
  return absl::InvalidArgumentError(
      absl::StrCat("--fusion '", name, "' is not max, logsumexp (or log_sum_exp) or posterior"));
}

}  // namespace gmmscore
