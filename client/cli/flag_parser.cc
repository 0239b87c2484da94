#include "client/cli/flag_parser.h"

#include <algorithm>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace gmmscore::cli {
namespace {

bool Accepts(const Command& command, absl::string_view name) {
  return std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end();
}

std::string SeeHelp(const Command& command) {
  return absl::StrCat(" (see: gmmscore help ", command.name, ")");
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseCommandFlags(const Command& command,
                                             const std::vector<std::string>& args) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      parsed.help = true;
      continue;
    }
    const bool operand = !absl::StartsWith(arg, "-") || arg == "-";
    if (operand && command.run_with_operands) {
      parsed.operands.emplace_back(arg);
      continue;
    }
    if (operand || arg == "--") {
      return UsageError(absl::StrCat("unexpected argument '", arg, "' for ", command.name,
                                     ": inputs are given as flags", SeeHelp(command)));
    }
    arg.remove_prefix(absl::StartsWith(arg, "--") ? 2 : 1);
    const size_t equals = arg.find('=');
    // --min-variance and --min_variance are the same flag (Kaldi users
    // write dashes; ABSL flag names have underscores).
    const std::string spelled = absl::StrReplaceAll(arg.substr(0, equals), {{"-", "_"}});
    absl::string_view name = spelled;
    std::string value;
    bool has_value = equals != absl::string_view::npos;
    if (has_value) value = std::string(arg.substr(equals + 1));

    absl::CommandLineFlag* flag = Accepts(command, name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr && absl::StartsWith(name, "no") && !has_value) {
      absl::CommandLineFlag* negated =
          Accepts(command, name.substr(2)) ? absl::FindCommandLineFlag(name.substr(2)) : nullptr;
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        name = name.substr(2);
        value = "false";
        has_value = true;
      }
    }
    if (flag == nullptr) {
      return UsageError(absl::StrCat("unknown flag --", name, " for ", command.name, SeeHelp(command)));
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return UsageError(absl::StrCat("flag --", name, " needs a value", SeeHelp(command)));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(absl::StrCat("bad value '", value, "' for --", name, ": ", error));
    }
    parsed.specified.insert(std::string(name));
  }
  return parsed;
}

std::string DescribeFlags(const Command& command) {
  std::string out;
  for (const std::string& name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    absl::StrAppend(&out, "  --", name);
    const std::string default_value = flag->DefaultValue();
    if (!default_value.empty()) absl::StrAppend(&out, " (default: ", default_value, ")");
    const auto own = command.flag_help.find(name);
    absl::StrAppend(&out, "\n      ", own != command.flag_help.end() ? own->second : flag->Help(), "\n");
  }
  return out;
}

}  // namespace gmmscore::cli
