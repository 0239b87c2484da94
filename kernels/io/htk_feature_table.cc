#include "kernels/io/htk_feature_table.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/htk_model.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

constexpr absl::string_view kPrefix = "htk:";
constexpr int64_t kHeaderBytes = 12;

absl::StatusOr<std::string> HtkTablePath(absl::string_view rspecifier) {
  if (!IsHtkRspecifier(rspecifier)) {
    return absl::InvalidArgumentError(absl::StrCat("'", rspecifier, "' is not an htk: table"));
  }
  const std::string path(absl::StripAsciiWhitespace(rspecifier.substr(kPrefix.size())));
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat("'", rspecifier, "': no file name"));
  if (path == "-" || path.front() == '|' || path.back() == '|') {
    return absl::UnimplementedError(
        absl::StrCat("'", rspecifier, "': standard input and pipes are not supported for htk: tables"));
  }
  return path;
}

// The key of a file named without a logical name: "dir/a.mfc" -> "a".
std::string BaseNameKey(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// A non-negative decimal index of an extended name's range.
bool ParseIndex(absl::string_view text, int64_t* index) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit)) return false;
  return absl::SimpleAtoi(text, index);
}

// Splits "name[s,e]" into name and range, as HShell.c's RegisterExtFileName
// does, but strictly: the range closes the name and holds two indices.
absl::Status ParseRange(absl::string_view physical, const std::string& where, HtkTableEntry* entry) {
  const size_t open = physical.find('[');
  const size_t close = physical.find(']');
  if (open == absl::string_view::npos && close == absl::string_view::npos) {
    entry->path = std::string(physical);
    return absl::OkStatus();
  }
  auto malformed = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": malformed extended file name \"", physical, "\": ", why,
                                                   " (expected LOGICAL=FILE[START,END])"));
  };
  if (open == absl::string_view::npos || open == 0 || close != physical.size() - 1 || close < open) {
    return malformed("a range is \"[START,END]\" at the end of the name");
  }
  const std::vector<absl::string_view> ends = absl::StrSplit(physical.substr(open + 1, close - open - 1), ',');
  if (ends.size() != 2 || !ParseIndex(ends[0], &entry->first_frame) || !ParseIndex(ends[1], &entry->last_frame)) {
    return malformed("START and END are frame numbers from 0");
  }
  if (entry->first_frame > entry->last_frame) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": range [", entry->first_frame, ",", entry->last_frame,
                                                   "] of \"", physical, "\" starts after its end"));
  }
  entry->path = std::string(physical.substr(0, open));
  return absl::OkStatus();
}

absl::Status CheckDistinctKeys(const std::vector<HtkTableEntry>& entries) {
  std::map<absl::string_view, const HtkTableEntry*> seen;
  for (const HtkTableEntry& entry : entries) {
    const auto [it, inserted] = seen.emplace(entry.key, &entry);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(entry.where, ": key '", entry.key, "' again (first at ",
                                                     it->second->where,
                                                     "); keys must be distinct: a logical name, KEY=FILE, sets one"));
    }
  }
  return absl::OkStatus();
}

// Whether `path` is one parameter file rather than a script: a regular file
// whose header fits its size, or which is binary (headers of real files
// hold NUL bytes: a sample count and a period under 2^24), so that a
// damaged one reports its damage. Anything else (a pipe, such as bash's
// htk:<(ls *.mfc)) is read as a script: it can be read only once.
absl::StatusOr<bool> IsLoneParameterFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) return io_internal::ErrnoStatus(error.value(), "open", path);
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a file"));
  }
  if (!std::filesystem::is_regular_file(status)) return false;
  const int64_t size = std::filesystem::file_size(path, error);
  if (error) return io_internal::ErrnoStatus(error.value(), "stat", path);
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_internal::ErrnoStatus(errno, "open", path);
  std::string head(kHeaderBytes, '\0');
  file.read(head.data(), kHeaderBytes);
  head.resize(file.gcount());
  return LooksLikeHtkParameterFile(head, size) || head.find('\0') != std::string::npos;
}

absl::StatusOr<std::vector<HtkTableEntry>> ParseHtkScript(const std::string& path, absl::string_view text) {
  std::vector<HtkTableEntry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    GMM_ASSIGN_OR_RETURN(HtkTableEntry entry,
                         ParseHtkScriptLine(line, absl::StrCat("HTK script '", path, "', line ", line_number)));
    entries.push_back(std::move(entry));
  }
  GMM_RETURN_IF_ERROR(CheckDistinctKeys(entries));
  return entries;
}

}  // namespace

bool IsHtkRspecifier(absl::string_view rspecifier) { return absl::StartsWith(rspecifier, kPrefix); }

absl::Status CheckHtkRspecifier(absl::string_view rspecifier) { return HtkTablePath(rspecifier).status(); }

absl::StatusOr<HtkTableEntry> ParseHtkScriptLine(absl::string_view line, const std::string& where) {
  if (line.find_first_of(" \t\r\v\f") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"", line, "\": one file name per line, without spaces or quotes"));
  }
  HtkTableEntry entry{.where = where};
  absl::string_view physical = line;
  const size_t equals = line.find('=');
  if (equals != absl::string_view::npos) {
    entry.key = std::string(line.substr(0, equals));
    physical = line.substr(equals + 1);
    if (entry.key.empty() || physical.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": malformed extended file name \"", line, "\" (expected LOGICAL=FILE[START,END])"));
    }
  }
  GMM_RETURN_IF_ERROR(ParseRange(physical, where, &entry));
  if (entry.key.empty()) entry.key = BaseNameKey(entry.path);
  if (entry.key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": \"", line, "\" names no file"));
  }
  return entry;
}

absl::StatusOr<std::vector<HtkTableEntry>> ReadHtkTable(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(const std::string path, HtkTablePath(rspecifier));
  absl::StatusOr<bool> lone = IsLoneParameterFile(path);
  if (!lone.ok()) return PrefixStatus(absl::StrCat("htk: table '", path, "'"), lone.status());
  if (*lone) {
    return std::vector<HtkTableEntry>{{.key = BaseNameKey(path), .path = path}};
  }
  absl::StatusOr<std::string> text = io_internal::ReadFileToString(path);
  if (!text.ok()) return PrefixStatus(absl::StrCat("HTK script '", path, "'"), text.status());
  return ParseHtkScript(path, *text);
}

absl::StatusOr<FloatMatrix> ReadHtkTableEntry(const HtkTableEntry& entry) {
  absl::StatusOr<HtkFeatures> features = entry.first_frame < 0
                                             ? ReadHtkParameterFile(entry.path)
                                             : ReadHtkParameterFrames(entry.path, entry.first_frame, entry.last_frame);
  if (!features.ok()) {
    if (entry.where.empty()) return features.status();  // a lone file: its message names it
    return PrefixStatus(absl::StrCat(entry.where, " (key '", entry.key, "')"), features.status());
  }
  return std::move(features->frames);
}

}  // namespace gmmscore
