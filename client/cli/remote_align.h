// `gmmscore align --server HOST:PORT`: the remote mode of `align`
// (align_commands.h). Each transcript's utterance (its features, or its
// audio as PCM16) goes to a gmmscored's Align RPC, several in flight at
// once, and the same CTM as the offline mode comes back:
//
//   gmmscore align --server host:50051 --model en-us --transcripts FILE
//                  (--features ark:F | --audio wav.scp) --output ctm:FILE
//                  [--phones] [--requests_in_flight 8] [--sample_rate 16000]
//
// --model names a model the server serves (with a dictionary in its
// config); --dict, --frames and --backend belong to the offline mode and
// are refused here. Connection flags as for every remote command
// (connection_flags.h).
#ifndef GMMSCORE_CLIENT_CLI_REMOTE_ALIGN_H_
#define GMMSCORE_CLIENT_CLI_REMOTE_ALIGN_H_

#include "client/cli/align_commands.h"

namespace gmmscore::cli {

// For AlignCommands(RemoteAlignMode()) in gmmscore_main.cc.
AlignRemoteMode RemoteAlignMode();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_REMOTE_ALIGN_H_
