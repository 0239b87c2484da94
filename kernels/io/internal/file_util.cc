#include "kernels/io/internal/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace gmmscore::io_internal {
namespace {

// Closes a file descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Closes now and reports the result; the destructor then does nothing.
  int Close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

}  // namespace

absl::Status ErrnoStatus(int error_number, absl::string_view action, absl::string_view path) {
  return absl::ErrnoToStatus(error_number, absl::StrCat("cannot ", action, " '", path, "'"));
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  FdCloser closer(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0) return ErrnoStatus(errno, "stat", path);
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a file"));
  }
  std::string data;
  // Regular files are read with one call of their exact size; pipes and other
  // special files grow the buffer until end of file.
  size_t capacity = S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) : 0;
  size_t size = 0;
  while (true) {
    if (size == capacity) capacity = capacity == 0 ? (1 << 16) : capacity + capacity / 2;
    if (data.size() < capacity) data.resize(capacity);
    const ssize_t got = ::read(fd, data.data() + size, capacity - size);
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read", path);
    }
    if (got == 0) break;
    size += static_cast<size_t>(got);
  }
  data.resize(size);
  return data;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data) {
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "create", temp);
  FdCloser closer(fd);
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t put = ::write(fd, data.data() + written, data.size() - written);
    if (put < 0) {
      if (errno == EINTR) continue;
      const absl::Status status = ErrnoStatus(errno, "write", temp);
      ::unlink(temp.c_str());
      return status;
    }
    written += static_cast<size_t>(put);
  }
  if (closer.Close() != 0) {
    const absl::Status status = ErrnoStatus(errno, "close", temp);
    ::unlink(temp.c_str());
    return status;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const absl::Status status = ErrnoStatus(errno, "rename into place", path);
    ::unlink(temp.c_str());
    return status;
  }
  return absl::OkStatus();
}

}  // namespace gmmscore::io_internal
