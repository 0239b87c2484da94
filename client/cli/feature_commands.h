// The audio-in command: features (speech file -> the features a Sphinx
// model scores, as a Kaldi archive), over kernels/frontend.
//
//   gmmscore features --input speech.wav --model en-us/ --output ark:feats.ark
//   gmmscore score ... / gmmscore stream --features ark:feats.ark ...
#ifndef GMMSCORE_CLIENT_CLI_FEATURE_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_FEATURE_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> FeatureCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_FEATURE_COMMANDS_H_
