// How the remote commands (stream, models, admin) reach a gmmscored: TLS or
// mutual TLS and a bearer token, from flags shared by all of them.
//
//   gmmscore admin list --server host:50051 --tls_ca ca.pem --token_file admin.token
//
//   GMM_ASSIGN_OR_RETURN(ClientOptions options, ClientOptionsFromFlags());
//   GMM_ASSIGN_OR_RETURN(auto client, Client::Connect(server, options));
//
// The token is read from a file (never a flag value, which `ps` would show)
// and never printed.
#ifndef GMMSCORE_CLIENT_CLI_CONNECTION_FLAGS_H_
#define GMMSCORE_CLIENT_CLI_CONNECTION_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace gmmscore::cli {

// The names to list in a remote command's Command::flags.
std::vector<std::string> ConnectionFlagNames();

// ClientOptions from --token_file, --tls_ca, --tls_cert, --tls_key: TLS when
// --tls_ca or --tls_cert is given (the system roots without --tls_ca),
// mutual TLS with --tls_cert and --tls_key. NOT_FOUND naming a file that
// cannot be read; a usage error for --tls_cert without --tls_key (or the
// reverse) and for an empty token file.
absl::StatusOr<ClientOptions> ClientOptionsFromFlags();

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_CONNECTION_FLAGS_H_
