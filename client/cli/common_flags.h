// Flags more than one command group uses. A command lists the names it
// accepts in its Command::flags; other groups reuse these declarations
// instead of defining their own (an ABSL_FLAG name may exist only once).
#ifndef GMMSCORE_CLIENT_CLI_COMMON_FLAGS_H_
#define GMMSCORE_CLIENT_CLI_COMMON_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(std::string, backend);
ABSL_DECLARE_FLAG(std::string, features);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(uint64_t, seed);

#endif  // GMMSCORE_CLIENT_CLI_COMMON_FLAGS_H_
