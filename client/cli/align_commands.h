// Forced alignment with a CMU Sphinx model, thin over kernels/hmm:
//
//   gmmscore align --model SPHINX_DIR --dict DICT --transcripts FILE
//                  (--features ark:F | --audio wav.scp) --output ctm:FILE
//                  [--phones] [--frames ark,t:F] [--backend auto|cpu|cuda]
//
// and, given a remote mode, on a gmmscored (--server HOST:PORT --model NAME).
#ifndef GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_
#define GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_

#include <functional>
#include <string>
#include <vector>

#include "client/cli/command.h"

namespace gmmscore::cli {

// The remote mode of `align`, run when --server is given: supplied by the
// binary, which links the client library (client/cli/remote_align.h), so
// that the offline command needs no gRPC.
struct AlignRemoteMode {
  std::vector<std::string> flags;  // accepted besides the offline ones
  std::string synopsis;            // for `gmmscore help align`
  std::function<absl::Status(const SpecifiedFlags&)> run;
};

// `align`; with a remote mode (`run` set) also `align --server`.
std::vector<Command> AlignCommands(const AlignRemoteMode& remote = {});

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_ALIGN_COMMANDS_H_
