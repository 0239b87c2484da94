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

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "client/cli/command.h"
#include "client/cli/feature_commands.h"
#include "client/cli/flag_parser.h"
#include "client/cli/offline_commands.h"
#include "client/cli/remote_commands.h"
#include "client/cli/train_commands.h"
#include "client/cli/hmm_commands.h"
#include "client/cli/admin_commands.h"
#include "client/cli/align_commands.h"
#include "client/cli/remote_align.h"
#include "client/cli/bw_command.h"
#include "client/cli/fmllr_command.h"
#include "kernels/core/mutex_mode.h"
#include "kernels/core/version.h"

namespace gmmscore::cli {
namespace {

std::vector<Command> AllCommands() {
  std::vector<Command> commands;
  for (std::vector<Command> group :
       {OfflineCommands(), FeatureCommands(), TrainCommands(), HmmCommands(), AlignCommands(RemoteAlignMode()),
        std::vector<Command>{BwCommand(), EstFmllrCommand()}, RemoteCommands(), AdminCommands()}) {
    for (Command& command : group) commands.push_back(std::move(command));
  }
  return commands;
}

// The command named by argv[at] or, for two-word commands ("admin load"),
// argv[at] and argv[at + 1]; *words says how many it took.
const Command* FindCommandAt(const std::vector<Command>& commands, int argc, char** argv, int at,
                             int* words);

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
  size_t width = 8;
  for (const Command& command : commands) width = std::max(width, command.name.size());
  for (const Command& command : commands) {
    absl::StrAppend(&out, "  ", command.name, std::string(width + 2 - command.name.size(), ' '),
                    command.summary, "\n");
  }
  absl::StrAppend(&out,
                  "\nFlags are --name=value or --name value. Exit status: 0 success, 1 failure, "
                  "2 usage error.\n");
  std::fputs(out.c_str(), stdout);
}

const Command* FindCommandAt(const std::vector<Command>& commands, int argc, char** argv, int at,
                             int* words) {
  if (at + 1 < argc) {
    if (const Command* two = FindCommand(commands, absl::StrCat(argv[at], " ", argv[at + 1]))) {
      *words = 2;
      return two;
    }
  }
  *words = 1;
  return FindCommand(commands, argv[at]);
}

void PrintCommandHelp(const Command& command) {
  const std::string out = absl::StrCat("usage: ", command.description, "\n\nflags:\n", DescribeFlags(command));
  std::fputs(out.c_str(), stdout);
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  const std::vector<Command> commands = AllCommands();
  if (argc < 2) return Fail(UsageError("no command given (see: gmmscore --help)"));
  const std::string first = argv[1];
  if (first == "--version" || first == "version") {
    std::puts(VersionLine("gmmscore").c_str());
    return kExitOk;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    if (first != "help" || argc == 2) {
      PrintOverview(commands);
      return kExitOk;
    }
    int words = 0;
    const Command* command = FindCommandAt(commands, argc, argv, 2, &words);
    if (command == nullptr) {
      return Fail(UsageError(absl::StrCat("no command '", argv[2], "' (see: gmmscore --help)")));
    }
    PrintCommandHelp(*command);
    return kExitOk;
  }
  int words = 0;
  const Command* command = FindCommandAt(commands, argc, argv, 1, &words);
  if (command == nullptr) {
    // A group of two-word commands named without its action ("admin").
    std::vector<std::string> actions;
    for (const Command& c : commands) {
      if (absl::StartsWith(c.name, first + " ")) actions.push_back(c.name.substr(first.size() + 1));
    }
    if (!actions.empty()) {
      return Fail(UsageError(absl::StrCat(first, " needs one of: ", absl::StrJoin(actions, ", "),
                                          " (see: gmmscore --help)")));
    }
    return Fail(UsageError(absl::StrCat("unknown command '", first, "' (see: gmmscore --help)")));
  }
  const std::vector<std::string> args(argv + 1 + words, argv + argc);
  absl::StatusOr<ParsedArgs> parsed = ParseCommandFlags(*command, args);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    PrintCommandHelp(*command);
    return kExitOk;
  }
  const absl::Status status = command->run_with_operands
                                  ? command->run_with_operands(parsed->specified, parsed->operands)
                                  : command->run(parsed->specified);
  if (!status.ok()) return Fail(status);
  return kExitOk;
}

}  // namespace
}  // namespace gmmscore::cli

int main(int argc, char** argv) { return gmmscore::cli::Main(argc, argv); }
