#include "client/cli/command.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace gmmscore::cli {
namespace {
constexpr absl::string_view kUsagePayload = "gmmscore.cli/usage";
}  // namespace

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsagePayload, absl::Cord("1"));
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

absl::Status RequireFlags(const SpecifiedFlags& specified, const std::vector<std::string>& names,
                          absl::string_view command) {
  for (const std::string& name : names) {
    if (!specified.contains(name)) {
      return UsageError(absl::StrCat(command, " needs --", name, " (see: gmmscore help ", command, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gmmscore::cli
