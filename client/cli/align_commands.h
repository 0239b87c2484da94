// Forced alignment with a CMU Sphinx model, thin over kernels/hmm:
//
//   gmmscore align --model SPHINX_DIR --dict DICT --transcripts FILE
//                  (--features ark:F | --audio wav.scp) --output ctm:FILE
//                  [--phones] [--frames ark,t:F] [--backend auto|cpu|cuda]
#ifndef GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> AlignCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_
