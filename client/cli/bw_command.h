// Baum-Welch re-estimation of a CMU Sphinx model, thin over kernels/hmm:
//
//   gmmscore bw --model SPHINX_DIR --dict DICT --transcripts FILE
//               (--features ark:F | --audio wav.scp) --iterations N --output_dir DIR
//               [--update_flags mvwt] [--backend auto|cpu|cuda]
#ifndef GMMSCORE_CLIENT_CLI_BW_COMMAND_H_
#define GMMSCORE_CLIENT_CLI_BW_COMMAND_H_

#include "client/cli/command.h"

namespace gmmscore::cli {

Command BwCommand();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_BW_COMMAND_H_
