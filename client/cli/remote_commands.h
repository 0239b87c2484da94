// The commands that talk to a running gmmscored: stream, models.
//
//   gmmscore stream --server localhost:50051 --model spk1,spk2 --features ark:feats.ark \
//                   --output ark,t:loglikes.txt
//   gmmscore models --server localhost:50051
#ifndef GMMSCORE_CLIENT_CLI_REMOTE_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_REMOTE_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> RemoteCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_REMOTE_COMMANDS_H_
