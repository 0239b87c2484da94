// The AdaptationConfig a command line asks for (gmmscore stream
// --adaptation, gmmscore-load --adaptation): one spelling of the methods
// and the schedule's checks for every tool.
//
//   GMM_ASSIGN_OR_RETURN(std::optional<v1::AdaptationConfig> a,
//                        AdaptationConfigFor("fmllr", 300, 500));
//   if (a.has_value()) *config.mutable_adaptation() = *a;
#ifndef GMMSCORE_CLIENT_ADAPTATION_CONFIG_H_
#define GMMSCORE_CLIENT_ADAPTATION_CONFIG_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmmscore/v1/scorer.pb.h"

namespace gmmscore {

// `method`: "none" (nullopt), "fmllr" or "map" (MAP means); the first
// update after `start_frames`, then one every `every_frames`.
// INVALID_ARGUMENT (naming the flags --adaptation,
// --adaptation_start_frames and --adaptation_every_frames) for another
// method or a count below 1.
absl::StatusOr<std::optional<v1::AdaptationConfig>> AdaptationConfigFor(absl::string_view method,
                                                                         int64_t start_frames,
                                                                         int64_t every_frames);

}  // namespace gmmscore

#endif  // GMMSCORE_CLIENT_ADAPTATION_CONFIG_H_
