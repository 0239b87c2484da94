// The fusion method a command line names (gmmscore stream --fusion,
// gmmscore-load --fusion): one spelling for every tool. Both tools used to
// differ (logsumexp against log_sum_exp); each now takes both.
//
//   GMM_ASSIGN_OR_RETURN(v1::FusionMethod method, FusionMethodFor("logsumexp"));
#ifndef GMMSCORE_CLIENT_FUSION_METHOD_H_
#define GMMSCORE_CLIENT_FUSION_METHOD_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore {

// "max", "logsumexp" (or "log_sum_exp") or "posterior"; INVALID_ARGUMENT
// naming --fusion and the three otherwise.
absl::StatusOr<v1::FusionMethod> FusionMethodFor(absl::string_view name);

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_FUSION_METHOD_H_
