#include "client/cli/connection_flags.h"

#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "client/cli/command.h"
#include "grpcpp/security/credentials.h"

ABSL_FLAG(std::string, token_file, "",
          "file holding the bearer token the server requires (gmmscored --admin_token_file for "
          "admin, --scoring_token_file for scoring); sent as 'authorization: Bearer <token>'");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle to verify the server with; turns TLS on (empty with --tls_cert: the "
          "system's roots)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate chain, for mutual TLS (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");

namespace gmmscore::cli {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot read %s %s", what, path));
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace

std::vector<std::string> ConnectionFlagNames() {
  return {"token_file", "tls_ca", "tls_cert", "tls_key"};
}

absl::StatusOr<ClientOptions> ClientOptionsFromFlags() {
  ClientOptions options;
  options.fail_fast = true;  // a command against a dead port says so at once
  if (const std::string path = absl::GetFlag(FLAGS_token_file); !path.empty()) {
    absl::StatusOr<std::string> token = ReadWhole(path, "token file");
    if (!token.ok()) return token.status();
    options.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
    if (options.bearer_token.empty()) {
      return UsageError(absl::StrFormat("token file %s is empty", path));
    }
  }
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_tls_key);
  if (cert.empty() != key.empty()) {
    return UsageError("--tls_cert and --tls_key go together (mutual TLS)");
  }
  if (ca.empty() && cert.empty()) return options;  // plaintext
  grpc::SslCredentialsOptions ssl;
  if (!ca.empty()) {
    absl::StatusOr<std::string> roots = ReadWhole(ca, "CA file");
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
  }
  if (!cert.empty()) {
    absl::StatusOr<std::string> chain = ReadWhole(cert, "certificate file");
    if (!chain.ok()) return chain.status();
    absl::StatusOr<std::string> private_key = ReadWhole(key, "key file");
    if (!private_key.ok()) return private_key.status();
    ssl.pem_cert_chain = *std::move(chain);
    ssl.pem_private_key = *std::move(private_key);
  }
  options.credentials = grpc::SslCredentials(ssl);
  return options;
}

}  // namespace gmmscore::cli
