// The training and adaptation commands, thin over kernels/train:
//
//   gmmscore acc-stats --model M --features ark:F [--alignments ark:A | --posteriors ark:P] --output ACCS
//   gmmscore sum-accs --output ACCS IN...
//   gmmscore est --model M --stats ACCS --output M2 [--mix_up N ...]
//   gmmscore train-gmm --features ark:F --num_gauss M --iterations N --output M2
//   gmmscore adapt-map --model M --features ark:F [--spk2utt ark:S --output_dir DIR | --output M2]
#ifndef GMMSCORE_CLIENT_CLI_TRAIN_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_TRAIN_COMMANDS_H_

#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

std::vector<Command> TrainCommands();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_TRAIN_COMMANDS_H_
