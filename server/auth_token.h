// Bearer tokens for the ModelAdmin service: the token lives in a file
// (--admin_token_file), clients send "authorization: Bearer <token>".
// Tokens never appear in logs or error messages.
//
//   GMM_ASSIGN_OR_RETURN(std::string token, ReadTokenFile("/etc/gmmscore/admin.token"));
//   absl::Status ok = CheckBearerToken(context->client_metadata(), token);
//
// Thread safety: pure functions.
#ifndef GMMSCORE_SERVER_AUTH_TOKEN_H_
#define GMMSCORE_SERVER_AUTH_TOKEN_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/string_ref.h"

namespace gmmscore {

// The file's content without surrounding whitespace. NOT_FOUND if it cannot
// be read; INVALID_ARGUMENT if it is empty or shorter than 16 characters
// (too guessable). The message names the file, never the content.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// OK if `metadata` carries "authorization: Bearer <expected>" (compared in
// constant time); UNAUTHENTICATED otherwise (missing header, other scheme,
// wrong token), with a message that does not echo what was sent. OK when
// `expected` is empty (no token configured).
absl::Status CheckBearerToken(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                              const std::string& expected);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_AUTH_TOKEN_H_
