// The file-in, file-out commands: score, convert, synth, info.
//
//   gmmscore score --model final.mdl.txt --features ark:feats.ark --output ark,t:loglikes.txt
//   gmmscore convert --model final.mdl.txt --output am.gmm
//   gmmscore synth --states 2000 --gaussians 16 --dim 39 --output synth.gmm
//   gmmscore info --model am.gmm
#ifndef GMMSCORE_CLIENT_CLI_OFFLINE_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_OFFLINE_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> OfflineCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_OFFLINE_COMMANDS_H_
