// gmmscored's config file (proto/gmmscore/v1/server_config.proto, protobuf
// text format) applied to its flags: a field sets the flag of its name
// before the command line is parsed, so that flags given there override the
// file. Per-model settings become RepositoryOptions.
//
//   const std::string path = ConfigPathFromArgs(argc, argv);
//   GMM_ASSIGN_OR_RETURN(v1::ServerConfig config, ReadServerConfig(path));
//   GMM_RETURN_IF_ERROR(ApplyConfigToFlags(config, path));
//   absl::ParseCommandLine(argc, argv);  // the command line on top
//   ... create the backend ...
//   GMM_RETURN_IF_ERROR(ApplyModelConfigs(config, backend->name(), max_batch, &repo_options));
//
// Thread safety: call from main() before other threads read flags.
#ifndef GMMSCORE_SERVER_SERVER_CONFIG_H_
#define GMMSCORE_SERVER_SERVER_CONFIG_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmmscore/v1/server_config.pb.h"
#include "server/device_list.h"
#include "server/model_repository.h"

namespace gmmscore {

// The file parsed. NOT_FOUND if it cannot be read; INVALID_ARGUMENT naming
// the file, line and column of a syntax error, unknown field or bad value.
absl::StatusOr<v1::ServerConfig> ReadServerConfig(const std::string& path);

// The value of --config (or -config, --config=F, --config F) in argv, the
// last one if several; "" when none. Read before absl::ParseCommandLine.
std::string ConfigPathFromArgs(int argc, char** argv);

// Sets, for every scalar field present in `config` outside `models`, the
// flag of the same name (call before absl::ParseCommandLine).
// INVALID_ARGUMENT naming `path` and the field if the flag rejects the
// value; INTERNAL if a field has no flag (the schema and the flags
// disagree: a bug).
absl::Status ApplyConfigToFlags(const v1::ServerConfig& config, const std::string& path);

// Checks `config.models` against the server (`backend`: its name, e.g.
// "cpu", "cuda:0"; `max_batch_frames`: the server's) and records them in
// *options (skip_at_start, max_batch_frames, precision, the dictionaries
// that let Sphinx models align). INVALID_ARGUMENT naming the
// model for an empty or repeated name, another backend, a precision other
// than fp32, or a batch limit outside [0, max_batch_frames].
// The names of `config.models` entries that name no model of `available`
// (ModelRepository::ModelNamesIn): a typo, whose settings would apply to
// nothing. gmmscored warns about each, and stops with --strict_config.
std::vector<std::string> UnmatchedModelConfigs(const v1::ServerConfig& config,
                                               const std::set<std::string>& available);

absl::Status ApplyModelConfigs(const v1::ServerConfig& config, const std::string& backend,
                               int64_t max_batch_frames, RepositoryOptions* options);
// The same on several devices: also each model's placement (its devices, or
// the GPU its backend "cuda:N" names) as scheduler indexes in
// options->placement; INVALID_ARGUMENT naming the model for a device not in
// `devices`, or both backend "cuda:N" and devices.
absl::Status ApplyModelConfigs(const v1::ServerConfig& config, const DeviceList& devices,
                               int64_t max_batch_frames, RepositoryOptions* options);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_SERVER_CONFIG_H_
