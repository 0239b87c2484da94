// ClientText: a string a client sent (a model name, a stream id, a token
// header), made safe to put in a log line or echo in an error message.
//
//   LogInfo("stream %s: ending", ClientText(config.stream_id()));
//   return absl::NotFoundError(absl::StrFormat("no model named '%s'", ClientText(name)));
//
// Why: a newline in a name forged log lines, a 10 MB stream id wrote 10 MB
// of log per stream, and a 1 MB name echoed in NOT_FOUND overflowed the
// client's metadata limit, so the client saw RESOURCE_EXHAUSTED instead of
// the real error (issue 16). Every client string that reaches a log or a
// status message goes through here, once.
#ifndef GMMSCORE_SERVER_CLIENT_TEXT_H_
#define GMMSCORE_SERVER_CLIENT_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gmmscore {

// Most characters of a client string shown; longer ones are cut.
inline constexpr size_t kClientTextMaxChars = 128;

// `text` with control characters, quotes, backslashes and bytes >= 0x80
// C-escaped (\n, \x01, ...), so that the result is one printable line; cut to
// kClientTextMaxChars escaped characters (never inside an escape), then
// "...(N bytes)" naming the original length.
std::string ClientText(absl::string_view text);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_CLIENT_TEXT_H_
