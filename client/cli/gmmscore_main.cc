// gmmscore: the command-line tool. Subcommand first, then its flags:
//
//   gmmscore score --model am.gmm --features ark:feats.ark --output ark,t:-
//   gmmscore help score
//
// The command table below is the only place commands are registered; each
// group lives in its own file (offline_commands.h) and returns its Commands.
// Exit status: 0 success, 1 failure, 2 usage error; every error is one line
// on stderr, "gmmscore: error: ...".
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "client/cli/command.h"
#include "client/cli/feature_commands.h"
#include "client/cli/flag_parser.h"
#include "client/cli/offline_commands.h"
#include "client/cli/remote_commands.h"

namespace gmmscore::cli {
namespace {

std::vector<Command> AllCommands() {
  std::vector<Command> commands;
  for (std::vector<Command> group : {OfflineCommands(), FeatureCommands(), RemoteCommands()}) {
    for (Command& command : group) commands.push_back(std::move(command));
  }
  return commands;
}

const Command* FindCommand(const std::vector<Command>& commands, const std::string& name) {
  for (const Command& command : commands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

int Fail(const absl::Status& status) {
  std::string message(status.message());
  // One line, whatever the message holds.
  message = absl::StrReplaceAll(message, {{"\r", " "}, {"\n", " "}});
  std::fprintf(stderr, "gmmscore: error: %s\n", message.c_str());
  return IsUsageError(status) ? kExitUsage : kExitFailure;
}

void PrintOverview(const std::vector<Command>& commands) {
  std::string out =
      "gmmscore: GMM acoustic log-likelihood scoring (Kaldi-compatible)\n\n"
      "usage: gmmscore COMMAND --flag=value ...\n"
      "       gmmscore help COMMAND\n\n"
      "commands:\n";
  for (const Command& command : commands) {
    absl::StrAppend(&out, "  ", command.name, std::string(10 - std::min<size_t>(command.name.size(), 9), ' '),
                    command.summary, "\n");
  }
  absl::StrAppend(&out,
                  "\nFlags are --name=value or --name value. Exit status: 0 success, 1 failure, "
                  "2 usage error.\n");
  std::fputs(out.c_str(), stdout);
}

void PrintCommandHelp(const Command& command) {
  const std::string out = absl::StrCat("usage: ", command.description, "\n\nflags:\n", DescribeFlags(command));
  std::fputs(out.c_str(), stdout);
}

int Main(int argc, char** argv) {
  const std::vector<Command> commands = AllCommands();
  if (argc < 2) return Fail(UsageError("no command given (see: gmmscore --help)"));
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    if (first != "help" || argc == 2) {
      PrintOverview(commands);
      return kExitOk;
    }
    const Command* command = FindCommand(commands, argv[2]);
    if (command == nullptr) {
      return Fail(UsageError(absl::StrCat("no command '", argv[2], "' (see: gmmscore --help)")));
    }
    PrintCommandHelp(*command);
    return kExitOk;
  }
  const Command* command = FindCommand(commands, first);
  if (command == nullptr) {
    return Fail(UsageError(absl::StrCat("unknown command '", first, "' (see: gmmscore --help)")));
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  absl::StatusOr<ParsedArgs> parsed = ParseCommandFlags(*command, args);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    PrintCommandHelp(*command);
    return kExitOk;
  }
  const absl::Status status = command->run(parsed->specified);
  if (!status.ok()) return Fail(status);
  return kExitOk;
}

}  // namespace
}  // namespace gmmscore::cli

int main(int argc, char** argv) { return gmmscore::cli::Main(argc, argv); }
