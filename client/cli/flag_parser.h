// Parses one subcommand's arguments into its ABSL_FLAGs.
//
//   GMM_ASSIGN_OR_RETURN(ParsedArgs args, ParseCommandFlags(command, argv_after_command));
//   if (args.help) PrintCommandHelp(command);
//
// absl::ParseCommandLine is not used: it exits the process on a bad flag
// with its own message and status 1, and accepts every flag of every command.
// This parser accepts only the command's own flags, as --name=value,
// --name value, --bool_flag and --nobool_flag, and reports problems as
// UsageError (exit 2), one line each. Values are parsed and stored through
// absl::CommandLineFlag::ParseFrom, so flag types and defaults stay those of
// the ABSL_FLAG definitions.
#ifndef GMMSCORE_CLIENT_CLI_FLAG_PARSER_H_
#define GMMSCORE_CLIENT_CLI_FLAG_PARSER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/command.h"

namespace gmmscore::cli {

struct ParsedArgs {
  SpecifiedFlags specified;
  bool help = false;  // --help or -h was given
  std::vector<std::string> operands;  // only for commands with run_with_operands
};

// `args` excludes the program and command names. Positional arguments are
// usage errors (every input is a flag), except for a command with
// run_with_operands, which receives them as operands.
absl::StatusOr<ParsedArgs> ParseCommandFlags(const Command& command,
                                             const std::vector<std::string>& args);

// "  --name (default: value)\n      help text\n" for each of the command's flags.
std::string DescribeFlags(const Command& command);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_FLAG_PARSER_H_
