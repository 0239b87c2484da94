#include "kernels/io/kaldi_matrix_archive.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"
#include "kernels/io/internal/input_stream.h"
#include "kernels/io/internal/kaldi_text.h"
#include "kernels/io/kaldi_specifier.h"

namespace gmmscore {
namespace {

static_assert(std::endian::native == std::endian::little,
              "Kaldi binary archives are read and written by memcpy on little-endian hosts");

using io_internal::InputStream;

// Longer keys mean we are reading something that is not an archive.
constexpr size_t kMaxKeyBytes = 4096;
// Binary entries larger than this are rejected before allocating.
constexpr double kMaxEntryBytes = double(int64_t{1} << 40);
// Reads from streams of unknown length go in chunks of this many values.
constexpr int64_t kChunkValues = int64_t{1} << 18;

// Kaldi's IsToken: non-empty; no whitespace or ASCII control bytes (bytes
// 0x80-0xfe, e.g. UTF-8, are allowed).
bool IsKaldiToken(absl::string_view key) {
  if (key.empty()) return false;
  for (const char ch : key) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || c == 0xff) return false;
  }
  return true;
}

template <typename T>
void AppendRaw(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

}  // namespace

// ---------------------------------------------------------------------------
// Reader

absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveReader>> KaldiMatrixArchiveReader::Open(
    absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(const ArchiveSpecifier spec, ParseArchiveRspecifier(rspecifier));
  absl::StatusOr<std::unique_ptr<InputStream>> in = InputStream::OpenFile(spec.path);
  if (!in.ok()) {
    return PrefixStatus(absl::StrCat("archive '", rspecifier, "'"), in.status());
  }
  return std::unique_ptr<KaldiMatrixArchiveReader>(new KaldiMatrixArchiveReader(*std::move(in)));
}

std::unique_ptr<KaldiMatrixArchiveReader> KaldiMatrixArchiveReader::FromString(std::string data, std::string name) {
  return std::unique_ptr<KaldiMatrixArchiveReader>(
      new KaldiMatrixArchiveReader(InputStream::FromString(std::move(data), std::move(name))));
}

KaldiMatrixArchiveReader::KaldiMatrixArchiveReader(std::unique_ptr<InputStream> in)
    : in_(std::move(in)) {}

KaldiMatrixArchiveReader::~KaldiMatrixArchiveReader() = default;

const std::string& KaldiMatrixArchiveReader::source_name() const { return in_->name(); }

absl::StatusOr<bool> KaldiMatrixArchiveReader::Next() {
  if (!error_.ok()) return error_;
  io_internal::SkipWhitespace(*in_);
  if (in_->Peek() == InputStream::kEof) {
    if (in_->status().ok()) return false;
    error_ = in_->status();
    return error_;
  }
  error_ = ReadEntry();
  if (!error_.ok()) return error_;
  return true;
}

absl::Status KaldiMatrixArchiveReader::Error(absl::StatusCode code, absl::string_view what) const {
  if (code == absl::StatusCode::kDataLoss && !in_->status().ok()) return in_->status();
  return absl::Status(code, absl::StrCat("archive '", in_->name(), "', entry '",
                                         absl::CEscape(key_.substr(0, 200)), "' (byte offset ",
                                         in_->offset(), "): ", what));
}

absl::Status KaldiMatrixArchiveReader::ReadEntry() {
  entry_offset_ = in_->offset();
  key_.clear();
  while (true) {
    const int c = in_->Peek();
    if (c == InputStream::kEof || io_internal::IsKaldiSpace(c)) break;
    key_.push_back(static_cast<char>(in_->Get()));
    if (key_.size() > kMaxKeyBytes) {
      return Error(absl::StatusCode::kInvalidArgument,
                   "key is over 4096 bytes long: this does not look like a Kaldi archive");
    }
  }
  const int after_key = in_->Peek();
  if (after_key == InputStream::kEof) {
    return Error(absl::StatusCode::kDataLoss, "archive ends right after the key (truncated?)");
  }
  if (after_key != '\n') in_->Get();  // the space after the key, as Kaldi
  if (in_->Peek() == InputStream::kEof) {
    return Error(absl::StatusCode::kDataLoss, "archive ends right after the key (truncated?)");
  }
  if (in_->Peek() == '\0') {
    in_->Get();
    const int marker = in_->Get();
    if (marker == InputStream::kEof) {
      return Error(absl::StatusCode::kDataLoss, "archive ends inside the binary header (truncated?)");
    }
    if (marker != 'B') {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat("expected the binary header \"\\0B\", got \"\\0\" then byte ",
                                marker));
    }
    return ReadBinaryMatrix();
  }
  return ReadTextMatrix();
}

absl::Status KaldiMatrixArchiveReader::ReadTextMatrix() {
  absl::StatusOr<FloatMatrix> matrix = io_internal::ReadTextMatrix(*in_);
  if (!matrix.ok()) {
    if (!in_->status().ok()) return in_->status();
    return absl::Status(matrix.status().code(),
                        absl::StrCat("archive '", in_->name(), "', entry '",
                                     absl::CEscape(key_.substr(0, 200)), "', ",
                                     matrix.status().message()));
  }
  matrix_ = *std::move(matrix);
  return absl::OkStatus();
}

absl::Status KaldiMatrixArchiveReader::ReadBinaryMatrix() {
  std::string token;
  while (true) {
    const int c = in_->Get();
    if (c == InputStream::kEof) {
      return Error(absl::StatusCode::kDataLoss, "archive ends inside the matrix type (truncated?)");
    }
    if (c == ' ') break;
    token.push_back(static_cast<char>(c));
    if (token.size() > 8) break;
  }
  if (token == "CM" || token == "CM2" || token == "CM3") {
    return Error(absl::StatusCode::kUnimplemented,
                 absl::StrCat("compressed matrices (", token,
                              ") are not supported; decompress the archive with "
                              "`copy-feats ark:IN ark:OUT` first"));
  }
  int value_bytes = 0;
  if (token == "FM") {
    value_bytes = 4;
  } else if (token == "DM") {
    value_bytes = 8;
  } else {
    return Error(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("expected a float matrix (\"FM \" or \"DM \"), got \"",
                              absl::CEscape(token), "\""));
  }
  int32_t sizes[2];
  for (int i = 0; i < 2; ++i) {
    const absl::string_view what = i == 0 ? "row count" : "column count";
    const int size_marker = in_->Get();
    if (size_marker == InputStream::kEof) {
      return Error(absl::StatusCode::kDataLoss, absl::StrCat("archive ends before the ", what, " (truncated?)"));
    }
    if (size_marker != 4) {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat("the ", what, " should be a 4-byte integer (size byte 4), size byte is ",
                                size_marker));
    }
    char bytes[4];
    if (in_->Read(bytes, 4) != 4) {
      return Error(absl::StatusCode::kDataLoss, absl::StrCat("archive ends inside the ", what, " (truncated?)"));
    }
    std::memcpy(&sizes[i], bytes, 4);
    if (sizes[i] < 0) {
      return Error(absl::StatusCode::kInvalidArgument, absl::StrCat("negative ", what, " ", sizes[i]));
    }
  }
  const int64_t rows = sizes[0], cols = sizes[1];
  const int64_t count = rows * cols;
  // Checked in double before the byte count is formed: rows * cols * 8 can
  // overflow int64 for damaged sizes (found by fuzzing).
  if (double(count) * value_bytes > kMaxEntryBytes) {
    return Error(absl::StatusCode::kInvalidArgument,
                 absl::StrCat(rows, " x ", cols, " matrix is implausibly large"));
  }
  const int64_t data_bytes = count * value_bytes;
  if (const std::optional<int64_t> left = in_->remaining(); left.has_value() && *left < data_bytes) {
    return Error(absl::StatusCode::kDataLoss,
                 absl::StrCat(rows, " x ", cols, " ", token, " needs ", data_bytes,
                              " bytes of data but only ", *left, " remain (truncated?)"));
  }
  // Reads in chunks so that a damaged size on a pipe fails at end of input
  // rather than by allocating the damaged size up front.
  std::vector<float> values;
  values.reserve(static_cast<size_t>(in_->remaining().has_value() ? count : std::min(count, kChunkValues)));
  std::vector<double> doubles;
  int64_t done = 0;
  while (done < count) {
    const int64_t take = std::min(kChunkValues, count - done);
    const size_t old_size = values.size();
    values.resize(old_size + static_cast<size_t>(take));
    int64_t got = 0;
    if (value_bytes == 4) {
      got = in_->Read(reinterpret_cast<char*>(values.data() + old_size), take * 4);
    } else {
      doubles.resize(static_cast<size_t>(take));
      got = in_->Read(reinterpret_cast<char*>(doubles.data()), take * 8);
      for (int64_t i = 0; i < take; ++i) values[old_size + i] = static_cast<float>(doubles[i]);
    }
    if (got != take * value_bytes) {
      return Error(absl::StatusCode::kDataLoss,
                   absl::StrCat("archive ends inside the data of a ", rows, " x ", cols, " ", token,
                                " (", done * value_bytes + got, " of ", data_bytes,
                                " bytes present; truncated?)"));
    }
    done += take;
  }
  matrix_ = FloatMatrix(rows, cols);
  if (count > 0) std::memcpy(matrix_.data(), values.data(), static_cast<size_t>(count) * sizeof(float));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<KaldiMatrixEntry>> ReadKaldiMatrixArchive(absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveReader> reader,
                       KaldiMatrixArchiveReader::Open(rspecifier));
  std::vector<KaldiMatrixEntry> entries;
  while (true) {
    GMM_ASSIGN_OR_RETURN(const bool more, reader->Next());
    if (!more) break;
    entries.push_back({reader->key(), std::move(reader->mutable_matrix())});
  }
  return entries;
}

// ---------------------------------------------------------------------------
// Writer

absl::Status AppendKaldiMatrixEntry(absl::string_view key, ConstMatrixView matrix, bool text,
                                    std::string* out) {
  if (!IsKaldiToken(key)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "archive key \"", absl::CEscape(key.substr(0, 200)),
        "\" is not a Kaldi token (empty, or has whitespace or control characters)"));
  }
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  if (matrix.rows > kMaxInt32 || matrix.cols > kMaxInt32) {
    return absl::InvalidArgumentError(absl::StrCat("entry '", key, "': ", matrix.rows, " x ",
                                                   matrix.cols, " does not fit Kaldi's int32 sizes"));
  }
  out->append(key.data(), key.size());
  out->push_back(' ');
  if (text) {
    io_internal::AppendTextMatrix(matrix, out);
    return absl::OkStatus();
  }
  out->append("\0BFM ", 5);
  out->push_back('\x04');
  AppendRaw<int32_t>(static_cast<int32_t>(matrix.rows), out);
  out->push_back('\x04');
  AppendRaw<int32_t>(static_cast<int32_t>(matrix.cols), out);
  for (int64_t r = 0; r < matrix.rows; ++r) {
    out->append(reinterpret_cast<const char*>(matrix.row(r)),
                static_cast<size_t>(matrix.cols) * sizeof(float));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KaldiMatrixArchiveWriter>> KaldiMatrixArchiveWriter::Open(
    absl::string_view wspecifier) {
  GMM_ASSIGN_OR_RETURN(const ArchiveSpecifier spec, ParseArchiveWspecifier(wspecifier));
  if (spec.path == "-") {
    return std::unique_ptr<KaldiMatrixArchiveWriter>(
        new KaldiMatrixArchiveWriter(stdout, false, spec.text, "standard output"));
  }
  std::FILE* file = std::fopen(spec.path.c_str(), "wb");
  if (file == nullptr) return io_internal::ErrnoStatus(errno, "create archive", spec.path);
  auto writer = std::unique_ptr<KaldiMatrixArchiveWriter>(
      new KaldiMatrixArchiveWriter(file, true, spec.text, spec.path));
  if (!spec.script_path.empty()) {
    writer->script_ = std::fopen(spec.script_path.c_str(), "w");
    if (writer->script_ == nullptr) return io_internal::ErrnoStatus(errno, "create script", spec.script_path);
    writer->script_name_ = spec.script_path;
  }
  return writer;
}

KaldiMatrixArchiveWriter::KaldiMatrixArchiveWriter(std::FILE* file, bool owns_file, bool text,
                                                   std::string name)
    : file_(file), owns_file_(owns_file), text_(text), name_(std::move(name)) {}

KaldiMatrixArchiveWriter::~KaldiMatrixArchiveWriter() {
  if (file_ != nullptr && owns_file_) std::fclose(file_);
  if (script_ != nullptr) std::fclose(script_);
}

absl::Status KaldiMatrixArchiveWriter::Write(absl::string_view key, ConstMatrixView matrix) {
  if (file_ == nullptr) return absl::FailedPreconditionError("archive writer is closed");
  buffer_.clear();
  GMM_RETURN_IF_ERROR(AppendKaldiMatrixEntry(key, matrix, text_, &buffer_));
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    return io_internal::ErrnoStatus(errno, "write archive", name_);
  }
  // The object starts after "KEY ", where Kaldi's scp points.
  const int64_t object = written_ + static_cast<int64_t>(key.size()) + 1;
  written_ += static_cast<int64_t>(buffer_.size());
  if (script_ != nullptr && std::fprintf(script_, "%.*s %s:%lld\n", static_cast<int>(key.size()), key.data(),
                                         name_.c_str(), static_cast<long long>(object)) < 0) {
    return io_internal::ErrnoStatus(errno, "write script", script_name_);
  }
  return absl::OkStatus();
}

absl::Status KaldiMatrixArchiveWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  std::FILE* file = file_;
  file_ = nullptr;
  const bool flushed = std::fflush(file) == 0 && !std::ferror(file);
  const int flush_errno = errno;
  if (owns_file_ && std::fclose(file) != 0) return io_internal::ErrnoStatus(errno, "close archive", name_);
  if (!flushed) return io_internal::ErrnoStatus(flush_errno, "write archive", name_);
  if (script_ != nullptr) {
    std::FILE* script = std::exchange(script_, nullptr);
    if (std::fclose(script) != 0) return io_internal::ErrnoStatus(errno, "close script", script_name_);
  }
  return absl::OkStatus();
}

absl::Status WriteKaldiMatrixArchive(absl::string_view wspecifier,
                                     absl::Span<const KaldiMatrixEntry> entries) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiMatrixArchiveWriter> writer,
                       KaldiMatrixArchiveWriter::Open(wspecifier));
  for (const KaldiMatrixEntry& entry : entries) {
    GMM_RETURN_IF_ERROR(writer->Write(entry.key, entry.matrix.view()));
  }
  return writer->Close();
}

}  // namespace gmmscore
