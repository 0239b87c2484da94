// Server credentials from PEM files: plaintext, TLS, or mutual TLS.
//
//   GMM_ASSIGN_OR_RETURN(auto creds, MakeServerCredentials({.cert_file = "server.pem",
//                                                           .key_file = "server.key",
//                                                           .client_ca_file = "ca.pem"}));
//
// Thread safety: pure functions.
#ifndef GMMSCORE_SERVER_TLS_CREDENTIALS_H_
#define GMMSCORE_SERVER_TLS_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace gmmscore {

struct TlsOptions {
  // Both empty: plaintext. Both set: TLS with this certificate chain and key.
  std::string cert_file;
  std::string key_file;
  // Set (with cert and key): mutual TLS; clients must present a certificate
  // signed by one of these CAs (valid now), else the handshake fails.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// INVALID_ARGUMENT for a cert without key (or the reverse), or a CA without
// them; NOT_FOUND naming a file that cannot be read. Key material is never
// put in a message.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options);

// A file's whole content; NOT_FOUND naming it.
absl::StatusOr<std::string> ReadPemFile(const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_TLS_CREDENTIALS_H_
