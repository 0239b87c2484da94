// InputStream: a buffered byte source (file, stdin or an in-memory string)
// that knows its byte offset and line number, for parsers that must say
// where input went wrong. Internal to kernels/io.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::OpenFile(path));
//   while (in->Peek() == ' ') in->Get();
//   Error(absl::StrCat(in->name(), ", line ", in->line(), ": ..."));
//
// Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_INPUT_STREAM_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_INPUT_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmmscore::io_internal {

class InputStream {
 public:
  static constexpr int kEof = -1;

  // Opens `path` for reading; "-" is standard input (not closed afterwards).
  // NOT_FOUND and other errno-derived codes on failure.
  static absl::StatusOr<std::unique_ptr<InputStream>> OpenFile(const std::string& path);
  // Reads from `data`, which the stream owns. `name` is used in messages.
  static std::unique_ptr<InputStream> FromString(std::string data, std::string name);

  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;
  ~InputStream();

  // The next byte (0..255) without consuming it, or kEof at end of input or
  // after a read error (see status()).
  int Peek() {
    if (pos_ == end_ && !Refill()) return kEof;
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  // Consumes and returns the next byte, or kEof.
  int Get() {
    const int c = Peek();
    if (c == kEof) return c;
    ++pos_;
    if (c == '\n') ++line_;
    return c;
  }
  // Copies up to `count` bytes into `out`; returns how many were copied (fewer
  // only at end of input or on a read error). Lines are not counted.
  int64_t Read(char* out, int64_t count);

  // Bytes consumed so far.
  int64_t offset() const { return consumed_before_buffer_ + static_cast<int64_t>(pos_); }
  // 1-based line of the next byte (counted by Get only).
  int64_t line() const { return line_; }
  // Bytes left when the total is known (regular files, strings).
  std::optional<int64_t> remaining() const;
  const std::string& name() const { return name_; }
  // OK unless a read from the underlying file failed.
  const absl::Status& status() const { return status_; }

 private:
  InputStream(int fd, bool owns_fd, std::string name, std::optional<int64_t> size);
  bool Refill();

  const int fd_;  // -1 for an in-memory stream
  const bool owns_fd_;
  const std::string name_;
  const std::optional<int64_t> size_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int64_t consumed_before_buffer_ = 0;
  int64_t line_ = 1;
  absl::Status status_;
};

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_INPUT_STREAM_H_
