#include "server/auth_token.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace gmmscore {
namespace {

// Equal strings in time that depends only on their lengths.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot read token file %s", path));
  std::stringstream content;
  content << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(content.str()));
  constexpr size_t kMinLength = 16;
  if (token.size() < kMinLength) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "token file %s holds %s; a token needs at least %d characters", path,
        token.empty() ? "nothing" : "too short a token", kMinLength));
  }
  return token;
}

absl::Status CheckBearerToken(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                              const std::string& expected) {
  if (expected.empty()) return absl::OkStatus();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(
        "this RPC needs a bearer token: send metadata 'authorization: Bearer <token>'");
  }
  const std::string value(it->second.data(), it->second.size());
  absl::string_view sent = value;
  if (!absl::ConsumePrefix(&sent, "Bearer ")) {
    return absl::UnauthenticatedError("the authorization metadata is not 'Bearer <token>'");
  }
  if (!ConstantTimeEquals(std::string(sent), expected)) {
    return absl::UnauthenticatedError("the bearer token is not valid");
  }
  return absl::OkStatus();
}

}  // namespace gmmscore
