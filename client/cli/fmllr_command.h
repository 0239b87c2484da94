// fMLLR estimation, thin over kernels/train (fmllr_stats.h, fmllr_estimate.h):
//
//   gmmscore est-fmllr --model M --features ark:F [--spk2utt ark:S]
//                      [--alignments ark:A | --posteriors ark:P] --output ark:TRANS
#ifndef GMMSCORE_CLIENT_CLI_FMLLR_COMMAND_H_
#define GMMSCORE_CLIENT_CLI_FMLLR_COMMAND_H_

#include "client/cli/command.h"

namespace gmmscore::cli {

Command EstFmllrCommand();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_FMLLR_COMMAND_H_
