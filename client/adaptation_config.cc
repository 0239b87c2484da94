#include "client/adaptation_config.h"

#include "absl/strings/str_cat.h"

namespace gmmscore {

absl::StatusOr<std::optional<v1::AdaptationConfig>> AdaptationConfigFor(absl::string_view method,
                                                                         int64_t start_frames,
                                                                         int64_t every_frames) {
  if (method == "none") return std::nullopt;
  v1::AdaptationConfig config;
  if (method == "fmllr") {
    config.set_method(v1::AdaptationConfig::FMLLR);
  } else if (method == "map") {
    config.set_method(v1::AdaptationConfig::MAP_MEANS);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --adaptation '", method, "' (expected none, fmllr or map)"));
  }
  if (start_frames < 1 || every_frames < 1) {
    return absl::InvalidArgumentError(
        "--adaptation_start_frames and --adaptation_every_frames must be >= 1");
  }
  config.set_start_after_frames(start_frames);
  config.set_update_every_frames(every_frames);
  return config;
}

}  // namespace gmmscore
