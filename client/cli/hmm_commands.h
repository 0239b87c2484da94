// The HMM commands, thin over kernels/hmm:
//
//   gmmscore hmm-forward --hmm H --model M --features ark:F
//   gmmscore hmm-train --hmm H --model M --features ark:F --iterations N --output H2 [--output_model M2]
#ifndef GMMSCORE_CLIENT_CLI_HMM_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_HMM_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> HmmCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_HMM_COMMANDS_H_
