#include "kernels/io/internal/kaldi_archive_io.h"

#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"
#include "kernels/io/internal/kaldi_text.h"
#include "kernels/io/kaldi_specifier.h"

namespace gmmscore::io_internal {
namespace {

// Longer keys mean we are reading something that is not an archive.
constexpr size_t kMaxKeyBytes = 4096;

}  // namespace

absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> KaldiArchiveInput::Open(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(const ArchiveSpecifier spec, ParseArchiveRspecifier(rspecifier));
  absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> in = OpenFile(spec.path);
  if (!in.ok()) return PrefixStatus(absl::StrCat("archive '", rspecifier, "'"), in.status());
  return in;
}

absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> KaldiArchiveInput::OpenFile(const std::string& path) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::OpenFile(path));
  return std::unique_ptr<KaldiArchiveInput>(new KaldiArchiveInput(std::move(in)));
}

std::unique_ptr<KaldiArchiveInput> KaldiArchiveInput::FromString(std::string data, std::string name) {
  return std::unique_ptr<KaldiArchiveInput>(
      new KaldiArchiveInput(InputStream::FromString(std::move(data), std::move(name))));
}

absl::StatusOr<bool> KaldiArchiveInput::Next(absl::FunctionRef<absl::Status(KaldiArchiveInput&)> read_object) {
  if (!error_.ok()) return error_;
  SkipWhitespace(*in_);
  if (in_->Peek() == InputStream::kEof) {
    error_ = in_->status();
    if (error_.ok()) return false;
    return error_;
  }
  error_ = ReadKey();
  if (error_.ok()) error_ = read_object(*this);
  if (!error_.ok()) return error_;
  return true;
}

absl::Status KaldiArchiveInput::Error(absl::StatusCode code, absl::string_view what) const {
  if (code == absl::StatusCode::kDataLoss && !in_->status().ok()) return in_->status();
  const std::string where =
      binary_ ? absl::StrCat("byte offset ", in_->offset()) : absl::StrCat("line ", in_->line());
  return absl::Status(code, absl::StrCat("archive '", in_->name(), "', entry '", absl::CEscape(key_.substr(0, 200)),
                                         "' (", where, "): ", what));
}

absl::Status KaldiArchiveInput::ReadKey() {
  entry_offset_ = in_->offset();
  binary_ = false;
  key_.clear();
  while (in_->Peek() != InputStream::kEof && !IsKaldiSpace(in_->Peek())) {
    key_.push_back(static_cast<char>(in_->Get()));
    if (key_.size() > kMaxKeyBytes) {
      return Error(absl::StatusCode::kInvalidArgument, "key is over 4096 bytes long: this is not a Kaldi archive");
    }
  }
  const int after_key = in_->Peek();
  if (after_key == ' ' || after_key == '\t') in_->Get();
  if (after_key != ' ' && after_key != '\t' && after_key != '\n' && after_key != InputStream::kEof) {
    return Error(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("expected a space after the key, got byte ", after_key));
  }
  if (in_->Peek() == InputStream::kEof) {
    return Error(absl::StatusCode::kDataLoss, "archive ends right after the key (truncated?)");
  }
  if (in_->Peek() != '\0') return absl::OkStatus();
  in_->Get();
  binary_ = true;
  const int marker = in_->Get();
  if (marker == 'B') return absl::OkStatus();
  if (marker == InputStream::kEof) {
    return Error(absl::StatusCode::kDataLoss, "archive ends inside the binary header (truncated?)");
  }
  return Error(absl::StatusCode::kInvalidArgument,
               absl::StrCat("expected the binary header \"\\0B\", got \"\\0\" then byte ", marker));
}

absl::Status KaldiArchiveInput::ReadBasic(absl::string_view what, int size, void* value) {
  const int size_byte = in_->Get();
  if (size_byte == InputStream::kEof) {
    return Error(absl::StatusCode::kDataLoss, absl::StrCat("archive ends before ", what, " (truncated?)"));
  }
  if (size_byte != size) {
    return Error(absl::StatusCode::kInvalidArgument,
                 absl::StrCat(what, ": expected the size byte ", size, ", got ", size_byte));
  }
  if (in_->Read(static_cast<char*>(value), size) != size) {
    return Error(absl::StatusCode::kDataLoss, absl::StrCat("archive ends inside ", what, " (truncated?)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> KaldiArchiveInput::ReadInt32(absl::string_view what) {
  int32_t value;
  GMM_RETURN_IF_ERROR(ReadBasic(what, 4, &value));
  return value;
}

absl::StatusOr<float> KaldiArchiveInput::ReadFloat(absl::string_view what) {
  if (in_->Peek() == 8) {
    double value;
    GMM_RETURN_IF_ERROR(ReadBasic(what, 8, &value));
    return static_cast<float>(value);
  }
  float value;
  GMM_RETURN_IF_ERROR(ReadBasic(what, 4, &value));
  return value;
}

std::string KaldiArchiveInput::ReadLine() {
  std::string line;
  for (int c = in_->Get(); c != '\n' && c != InputStream::kEof; c = in_->Get()) line.push_back(static_cast<char>(c));
  return line;
}

std::optional<int32_t> ParseTextInt32(absl::string_view token) {
  if (absl::ConsumePrefix(&token, "+") && absl::StartsWith(token, "-")) return std::nullopt;
  return ParseInt(token);
}

bool IsKaldiToken(absl::string_view token) {
  if (token.empty()) return false;
  for (const char ch : token) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || c == 0xff) return false;
  }
  return true;
}

absl::Status AppendArchiveKey(absl::string_view key, bool text, std::string* out) {
  if (!IsKaldiToken(key)) {
    return absl::InvalidArgumentError(absl::StrCat("archive key \"", absl::CEscape(key.substr(0, 200)),
                                                   "\" is not a Kaldi token (empty, or has whitespace or control "
                                                   "characters)"));
  }
  absl::StrAppend(out, key, " ");
  if (!text) out->append("\0B", 2);
  return absl::OkStatus();
}

absl::Status WriteArchiveBytes(const std::string& path, absl::string_view bytes) {
  if (path != "-") return WriteFileAtomically(path, bytes);
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
    return ErrnoStatus(errno, "write archive", "standard output");
  }
  return absl::OkStatus();
}

}  // namespace gmmscore::io_internal
