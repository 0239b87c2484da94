// The commands that manage a running gmmscored's models over
// gmmscore.v1.ModelAdmin (proto/gmmscore/v1/admin.proto):
//
//   gmmscore admin list    --server HOST:PORT [--token_file F] [--tls_ca CA ...]
//   gmmscore admin load    --server HOST:PORT --name NAME   # serve it (or a new version)
//   gmmscore admin replace --server HOST:PORT --name NAME   # only if served now
//   gmmscore admin unload  --server HOST:PORT --name NAME
//
// Streams running on a replaced or unloaded version finish on it (see
// docs/OPERATIONS.md).
#ifndef GMMSCORE_CLIENT_CLI_ADMIN_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_ADMIN_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

// The four commands, named "admin list", "admin load", "admin replace",
// "admin unload" (gmmscore_main.cc matches two-word names).
std::vector<Command> AdminCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_ADMIN_COMMANDS_H_
