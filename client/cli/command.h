// The shape of a gmmscore subcommand, so command groups in their own files
// (offline_commands.h; later stream and models) plug into one table in
// gmmscore_main.cc.
//
//   std::vector<Command> commands = OfflineCommands();
//   // each: {"score", "one-line summary", "long help", {"model", "features"}, RunScore}
//
// A command's flags are ordinary ABSL_FLAGs; `flags` lists the names it
// accepts, and flag_parser.h parses exactly those. A command returns OK, a
// Status (exit 1) or UsageError(...) (exit 2).
#ifndef GMMSCORE_CLIENT_CLI_COMMAND_H_
#define GMMSCORE_CLIENT_CLI_COMMAND_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gmmscore::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Names of the flags given on the command line (whatever their values).
using SpecifiedFlags = std::set<std::string>;

struct Command {
  std::string name;
  std::string summary;      // one line, for `gmmscore --help`
  std::string description;  // synopsis and explanation, for `gmmscore help NAME`
  std::vector<std::string> flags;
  std::function<absl::Status(const SpecifiedFlags&)> run;
  // For commands that take operands after their flags (sum-accs IN...):
  // set instead of `run`; other commands refuse operands.
  std::function<absl::Status(const SpecifiedFlags&, const std::vector<std::string>&)> run_with_operands;
  // This command's own help for flags whose shared text does not fit it
  // (--model is a file offline and a served name remotely).
  std::map<std::string, std::string> flag_help;
};

// A Status that makes the program exit with kExitUsage (bad flags, missing
// or conflicting arguments) rather than kExitFailure.
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// UsageError naming the first of `names` that was not given.
absl::Status RequireFlags(const SpecifiedFlags& specified, const std::vector<std::string>& names,
                          absl::string_view command);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_COMMAND_H_
