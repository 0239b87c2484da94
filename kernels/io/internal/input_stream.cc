#include "kernels/io/internal/input_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore::io_internal {
namespace {
constexpr size_t kBufferBytes = 1 << 16;
}  // namespace

absl::StatusOr<std::unique_ptr<InputStream>> InputStream::OpenFile(const std::string& path) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  std::optional<int64_t> size;
  struct stat info;
  if (::fstat(fd, &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      if (!is_stdin) ::close(fd);
      return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a file"));
    }
    // Standard input may be a regular file already partly read; its size
    // then says nothing about what is left.
    if (S_ISREG(info.st_mode) && !is_stdin) size = info.st_size;
  }
  return std::unique_ptr<InputStream>(
      new InputStream(fd, !is_stdin, is_stdin ? std::string("standard input") : path, size));
}

std::unique_ptr<InputStream> InputStream::FromString(std::string data, std::string name) {
  const int64_t size = static_cast<int64_t>(data.size());
  std::unique_ptr<InputStream> stream(new InputStream(-1, false, std::move(name), size));
  stream->buffer_ = std::move(data);
  stream->end_ = stream->buffer_.size();
  return stream;
}

InputStream::InputStream(int fd, bool owns_fd, std::string name, std::optional<int64_t> size)
    : fd_(fd), owns_fd_(owns_fd), name_(std::move(name)), size_(size) {}

InputStream::~InputStream() {
  if (owns_fd_) ::close(fd_);
}

bool InputStream::Refill() {
  if (fd_ < 0 || !status_.ok()) return false;
  consumed_before_buffer_ += static_cast<int64_t>(pos_);
  buffer_.resize(kBufferBytes);
  pos_ = 0;
  end_ = 0;
  while (true) {
    const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      status_ = ErrnoStatus(errno, "read", name_);
      return false;
    }
    end_ = static_cast<size_t>(got);
    return got > 0;
  }
}

int64_t InputStream::Read(char* out, int64_t count) {
  int64_t copied = 0;
  while (copied < count) {
    if (pos_ == end_) {
      // Large reads bypass the buffer once it is drained.
      if (fd_ >= 0 && count - copied >= static_cast<int64_t>(kBufferBytes) && status_.ok()) {
        consumed_before_buffer_ += static_cast<int64_t>(pos_);
        pos_ = end_ = 0;
        const ssize_t got = ::read(fd_, out + copied, static_cast<size_t>(count - copied));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
          status_ = ErrnoStatus(errno, "read", name_);
          break;
        }
        if (got == 0) break;
        copied += got;
        consumed_before_buffer_ += got;
        continue;
      }
      if (!Refill()) break;
    }
    const int64_t take = std::min<int64_t>(count - copied, static_cast<int64_t>(end_ - pos_));
    std::memcpy(out + copied, buffer_.data() + pos_, static_cast<size_t>(take));
    pos_ += static_cast<size_t>(take);
    copied += take;
  }
  return copied;
}

std::optional<int64_t> InputStream::remaining() const {
  if (!size_.has_value()) return std::nullopt;
  return *size_ - offset();
}

}  // namespace gmmscore::io_internal
