#include "kernels/io/kaldi_script_table.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/htk_feature_table.h"
#include "kernels/io/internal/file_util.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/internal/kaldi_binary.h"
#include "kernels/io/internal/kaldi_text.h"
#include "kernels/io/kaldi_specifier.h"

namespace gmmscore {
namespace {

// The longest text matrix read from one offset; longer means a bad offset.
constexpr int64_t kMaxTextObjectBytes = int64_t{1} << 30;

absl::StatusOr<std::string> ScriptPath(absl::string_view rspecifier) {
  const size_t colon = rspecifier.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", rspecifier, "' is not a Kaldi rspecifier"));
  }
  bool script = false;
  for (absl::string_view option : absl::StrSplit(rspecifier.substr(0, colon), ',')) {
    option = absl::StripAsciiWhitespace(option);
    if (option == "scp") {
      script = true;
    } else if (option == "p") {
      return absl::UnimplementedError(absl::StrCat("'", rspecifier, "': the permissive option \"p\" is not supported"));
    } else if (option != "o" && option != "s" && option != "cs" && option != "b" && option != "t" && option != "ns" &&
               option != "no" && option != "nw" && option != "bg") {
      return absl::InvalidArgumentError(absl::StrCat("'", rspecifier, "': unknown rspecifier option \"", option, "\""));
    }
  }
  if (!script) return absl::InvalidArgumentError(absl::StrCat("'", rspecifier, "' is not an scp: table"));
  std::string path(absl::StripAsciiWhitespace(rspecifier.substr(colon + 1)));
  if (path.empty() || path.front() == '|' || path.back() == '|') {
    return absl::UnimplementedError(absl::StrCat("'", rspecifier, "': empty file name or a pipe"));
  }
  return path;
}

}  // namespace

bool IsScriptRspecifier(absl::string_view rspecifier) {
  const size_t colon = rspecifier.find(':');
  if (colon == absl::string_view::npos) return false;
  for (absl::string_view option : absl::StrSplit(rspecifier.substr(0, colon), ',')) {
    if (absl::StripAsciiWhitespace(option) == "scp") return true;
  }
  return false;
}

absl::StatusOr<FloatMatrix> ReadKaldiMatrixObject(const std::string& path, int64_t offset) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_internal::ErrnoStatus(errno, "open", path);
  file.seekg(0, std::ios::end);
  const int64_t size = file.tellg();
  const std::string where = absl::StrCat("archive '", path, "', object at byte offset ", offset);
  if (offset < 0 || offset >= size) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the file has only ", size, " bytes"));
  }
  file.seekg(offset);
  char header[2] = {0, 0};
  file.read(header, 2);
  if (header[0] == '\0' && header[1] == 'B') {
    // "FM " + two (size byte, int32) pairs, then the data they announce.
    std::string head(13, '\0');
    file.read(head.data(), 13);
    head.resize(file.gcount());
    io_internal::KaldiBinaryReader probe(head, where);
    const std::string type = probe.PeekToken();
    if (type == "CM" || type == "CM2" || type == "CM3") {
      return absl::UnimplementedError(absl::StrCat(where, ": compressed matrices are not supported"));
    }
    int64_t value_bytes = type == "DM" ? 8 : 4;
    int64_t rows = 0, cols = 0;
    if (head.size() == 13) {
      int32_t r, c;
      std::memcpy(&r, head.data() + 4, 4);
      std::memcpy(&c, head.data() + 9, 4);
      rows = r;
      cols = c;
    }
    const int64_t data = rows > 0 && cols > 0 ? rows * cols * value_bytes : 0;
    std::string bytes = head;
    if (data > 0 && data <= size) {
      bytes.resize(13 + data);
      file.read(bytes.data() + 13, data);
      bytes.resize(13 + file.gcount());
    }
    io_internal::KaldiBinaryReader in(bytes, where);
    return in.ReadFloatMatrix("the matrix");
  }
  file.seekg(offset);
  std::string text;
  char c;
  while (file.get(c)) {
    text.push_back(c);
    if (c == ']') break;
    if (static_cast<int64_t>(text.size()) > kMaxTextObjectBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": no matrix found"));
    }
  }
  std::unique_ptr<io_internal::InputStream> in = io_internal::InputStream::FromString(std::move(text), path);
  absl::StatusOr<FloatMatrix> matrix = io_internal::ReadTextMatrix(*in);
  if (!matrix.ok()) return PrefixStatus(where, matrix.status());
  return matrix;
}

absl::StatusOr<std::vector<KaldiScriptLine>> ReadKaldiScript(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(const std::string scp_path, ScriptPath(rspecifier));
  absl::StatusOr<std::string> contents = io_internal::ReadFileToString(scp_path);
  if (!contents.ok()) {
    return PrefixStatus(absl::StrCat("scp '", scp_path, "'"), contents.status());
  }
  std::vector<KaldiScriptLine> lines;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*contents, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::string where = absl::StrCat("scp '", scp_path, "', line ", line_number);
    const size_t space = line.find_first_of(" \t");
    if (space == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": expected \"KEY FILE[:OFFSET]\""));
    }
    KaldiScriptLine entry{.key = std::string(line.substr(0, space)), .where = where};
    const std::string rx(absl::StripAsciiWhitespace(line.substr(space)));
    if (rx.back() == '|' || rx.front() == '|' || rx.back() == ']') {
      return absl::UnimplementedError(absl::StrCat(where, ": pipes and ranges are not supported: \"", rx, "\""));
    }
    entry.path = rx;
    const size_t colon = rx.rfind(':');
    if (colon != std::string::npos && colon + 1 < rx.size() && absl::SimpleAtoi(rx.substr(colon + 1), &entry.offset)) {
      entry.path = rx.substr(0, colon);
    } else {
      entry.offset = 0;
    }
    lines.push_back(std::move(entry));
  }
  return lines;
}

absl::StatusOr<FloatMatrix> ReadKaldiScriptLine(const KaldiScriptLine& line) {
  absl::StatusOr<FloatMatrix> matrix = ReadKaldiMatrixObject(line.path, line.offset);
  if (!matrix.ok()) return PrefixStatus(absl::StrCat(line.where, " (key '", line.key, "')"), matrix.status());
  return matrix;
}

absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiScriptTable(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(const std::vector<KaldiScriptLine> lines, ReadKaldiScript(rspecifier));
  std::vector<KaldiMatrixEntry> entries;
  for (const KaldiScriptLine& line : lines) {
    GMM_ASSIGN_OR_RETURN(FloatMatrix matrix, ReadKaldiScriptLine(line));
    entries.push_back({line.key, std::move(matrix)});
  }
  return entries;
}

absl::StatusOr<std::unique_ptr<KaldiMatrixTableReader>> KaldiMatrixTableReader::Open(absl::string_view rspecifier) {
  auto reader = std::unique_ptr<KaldiMatrixTableReader>(new KaldiMatrixTableReader());
  if (IsHtkRspecifier(rspecifier)) {
    reader->htk_ = true;
    GMM_ASSIGN_OR_RETURN(reader->htk_entries_, ReadHtkTable(rspecifier));
  } else if (IsScriptRspecifier(rspecifier)) {
    GMM_ASSIGN_OR_RETURN(reader->script_, ReadKaldiScript(rspecifier));
  } else {
    GMM_ASSIGN_OR_RETURN(reader->archive_, KaldiMatrixArchiveReader::Open(rspecifier));
  }
  return reader;
}

absl::StatusOr<bool> KaldiMatrixTableReader::Next() {
  if (archive_ != nullptr) {
    GMM_ASSIGN_OR_RETURN(const bool more, archive_->Next());
    if (!more) return false;
    key_ = archive_->key();
    matrix_ = std::move(archive_->mutable_matrix());
    return true;
  }
  if (htk_) {
    if (next_line_ == htk_entries_.size()) return false;
    const HtkTableEntry& entry = htk_entries_[next_line_++];
    GMM_ASSIGN_OR_RETURN(matrix_, ReadHtkTableEntry(entry));
    key_ = entry.key;
    return true;
  }
  if (next_line_ == script_.size()) return false;
  const KaldiScriptLine& line = script_[next_line_++];
  GMM_ASSIGN_OR_RETURN(matrix_, ReadKaldiScriptLine(line));
  key_ = line.key;
  return true;
}

absl::Status CheckTableRspecifier(absl::string_view rspecifier) {
  if (IsHtkRspecifier(rspecifier)) return CheckHtkRspecifier(rspecifier);
  if (IsScriptRspecifier(rspecifier)) return ScriptPath(rspecifier).status();
  return ParseArchiveRspecifier(rspecifier).status();
}

absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiMatrixTable(absl::string_view rspecifier) {
  if (IsHtkRspecifier(rspecifier)) {
    std::vector<KaldiMatrixEntry> entries;
    GMM_ASSIGN_OR_RETURN(const std::unique_ptr<KaldiMatrixTableReader> reader,
                         KaldiMatrixTableReader::Open(rspecifier));
    while (true) {
      GMM_ASSIGN_OR_RETURN(const bool more, reader->Next());
      if (!more) return entries;
      entries.push_back({reader->key(), std::move(reader->mutable_matrix())});
    }
  }
  if (IsScriptRspecifier(rspecifier)) return ReadKaldiScriptTable(rspecifier);
  return ReadKaldiMatrixArchive(rspecifier);
}

}  // namespace gmmscore
