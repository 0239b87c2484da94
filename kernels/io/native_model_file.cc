#include "kernels/io/native_model_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/file_util.h"

namespace gmmscore {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the native model file is little-endian and is read by memcpy");

constexpr int64_t kCrcOffset = 60;
constexpr int64_t kReservedOffset = 40;

struct Header {
  uint32_t version = 0;
  uint32_t header_bytes = 0;
  int32_t dim = 0;
  int32_t num_states = 0;
  int64_t num_gaussians = 0;
  uint64_t payload_bytes = 0;
  uint32_t crc = 0;
};

template <typename T>
T Load(const char* bytes, int64_t offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof(T));
  return value;
}
template <typename T>
void Store(T value, int64_t offset, char* bytes) {
  std::memcpy(bytes + offset, &value, sizeof(T));
}

uint32_t Crc(uint32_t crc, const void* data, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

// Payload bytes implied by the counts, or -1 when they are out of range.
int64_t ExpectedPayloadBytes(int64_t dim, int64_t states, int64_t gaussians) {
  if (dim <= 0 || states <= 0 || gaussians < states) return -1;
  // Bounded so the products below cannot overflow.
  if (dim > (1 << 20) || gaussians > (int64_t{1} << 40)) return -1;
  return 8 * (states + 1) + 4 * dim + 4 * gaussians * (1 + 2 * dim);
}

// Where the bytes come from: a file descriptor or memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads exactly `size` bytes; false on a short read (status() says why if
  // it was an I/O error rather than end of input).
  virtual bool Read(void* out, size_t size) = 0;
  virtual absl::Status status() const { return absl::OkStatus(); }
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(absl::string_view bytes) : bytes_(bytes) {}
  bool Read(void* out, size_t size) override {
    if (size > bytes_.size() - pos_) return false;
    std::memcpy(out, bytes_.data() + pos_, size);
    pos_ += size;
    return true;
  }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  ~FileSource() override { ::close(fd_); }
  bool Read(void* out, size_t size) override {
    char* dst = static_cast<char*>(out);
    while (size > 0) {
      const ssize_t got = ::read(fd_, dst, size);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) status_ = io_internal::ErrnoStatus(errno, "read", path_);
      if (got <= 0) return false;
      dst += got;
      size -= static_cast<size_t>(got);
    }
    return true;
  }
  absl::Status status() const override { return status_; }

 private:
  const int fd_;
  const std::string path_;
  absl::Status status_;
};

class Decoder {
 public:
  Decoder(ByteSource& source, int64_t file_bytes, absl::string_view name)
      : source_(source), file_bytes_(file_bytes), name_(name) {}

  absl::StatusOr<DiagGmmModel> Decode() {
    GMM_ASSIGN_OR_RETURN(const Header header, ReadHeader());
    const int64_t expected =
        ExpectedPayloadBytes(header.dim, header.num_states, header.num_gaussians);
    if (expected < 0 || static_cast<uint64_t>(expected) != header.payload_bytes) {
      // A damaged header and a writer's mistake look alike; the checksum
      // tells them apart.
      GMM_ASSIGN_OR_RETURN(const uint32_t crc, CrcOfPayload(header.payload_bytes));
      if (crc != header.crc) return ChecksumMismatch(header.crc, crc);
      return Error(absl::InvalidArgumentError, absl::StrCat(
          "inconsistent header: dimension ", header.dim, ", ", header.num_states, " states and ",
          header.num_gaussians, " Gaussians need ", expected, " payload bytes, header says ",
          header.payload_bytes));
    }
    std::vector<int64_t> offsets(header.num_states + 1);
    std::vector<float> center(header.dim);
    std::vector<float> params(header.num_gaussians * (1 + 2 * int64_t{header.dim}));
    uint32_t crc = crc_of_header_;
    GMM_RETURN_IF_ERROR(ReadArray(offsets.data(), offsets.size() * sizeof(int64_t), &crc));
    GMM_RETURN_IF_ERROR(ReadArray(center.data(), center.size() * sizeof(float), &crc));
    GMM_RETURN_IF_ERROR(ReadArray(params.data(), params.size() * sizeof(float), &crc));
    if (crc != header.crc) return ChecksumMismatch(header.crc, crc);
    if (offsets.back() != header.num_gaussians) {
      return Error(absl::InvalidArgumentError,
                   absl::StrCat("state offsets end at ", offsets.back(), " but the header says ",
                                header.num_gaussians, " Gaussians"));
    }
    absl::StatusOr<DiagGmmModel> model = DiagGmmModel::FromScoringForm(
        header.dim, std::move(offsets), std::move(center), std::move(params));
    if (!model.ok()) return Error(absl::InvalidArgumentError, model.status().message());
    return model;
  }

 private:
  absl::Status Error(absl::Status (*make)(absl::string_view), absl::string_view what) const {
    return make(absl::StrCat("model file '", name_, "': ", what));
  }
  absl::Status ChecksumMismatch(uint32_t stored, uint32_t computed) const {
    return Error(absl::DataLossError,
                 absl::StrCat("checksum mismatch (stored crc32 ", absl::Hex(stored, absl::kZeroPad8),
                              ", computed ", absl::Hex(computed, absl::kZeroPad8),
                              "): the file is corrupted"));
  }
  absl::Status Truncated(int64_t expected_total) const {
    if (!source_.status().ok()) return source_.status();
    return Error(absl::DataLossError, absl::StrCat("truncated: ", file_bytes_, " bytes, expected ",
                                                   expected_total));
  }

  absl::StatusOr<Header> ReadHeader() {
    char bytes[kNativeModelHeaderBytes] = {};
    const int64_t available = std::min(file_bytes_, kNativeModelHeaderBytes);
    if (!source_.Read(bytes, static_cast<size_t>(available))) return Truncated(kNativeModelHeaderBytes);
    const int64_t magic_bytes = std::min<int64_t>(available, sizeof(kNativeModelMagic));
    if (std::memcmp(bytes, kNativeModelMagic, magic_bytes) != 0) {
      return Error(absl::InvalidArgumentError,
                   "wrong magic bytes: not a gmmscore native model file");
    }
    if (available < kNativeModelHeaderBytes) return Truncated(kNativeModelHeaderBytes);
    Header header;
    header.version = Load<uint32_t>(bytes, 8);
    header.header_bytes = Load<uint32_t>(bytes, 12);
    header.dim = Load<int32_t>(bytes, 16);
    header.num_states = Load<int32_t>(bytes, 20);
    header.num_gaussians = Load<int64_t>(bytes, 24);
    header.payload_bytes = Load<uint64_t>(bytes, 32);
    header.crc = Load<uint32_t>(bytes, kCrcOffset);
    if (header.version != kNativeModelVersion) {
      return Error(absl::InvalidArgumentError,
                   absl::StrCat("unsupported version ", header.version, " (this build reads version ",
                                kNativeModelVersion, ")"));
    }
    if (header.header_bytes != kNativeModelHeaderBytes) {
      return Error(absl::InvalidArgumentError,
                   absl::StrCat("header size ", header.header_bytes, " is not ",
                                kNativeModelHeaderBytes));
    }
    const uint64_t payload_available = static_cast<uint64_t>(file_bytes_ - kNativeModelHeaderBytes);
    if (header.payload_bytes > payload_available) {
      return Error(absl::DataLossError,
                   absl::StrCat("truncated: ", file_bytes_, " bytes, header promises ",
                                kNativeModelHeaderBytes, " + ", header.payload_bytes));
    }
    if (header.payload_bytes < payload_available) {
      return Error(absl::DataLossError,
                   absl::StrCat(payload_available - header.payload_bytes,
                                " unexpected bytes after the payload"));
    }
    for (int64_t i = kReservedOffset; i < kCrcOffset; ++i) {
      if (bytes[i] != 0) reserved_nonzero_ = true;
    }
    crc_of_header_ = Crc(0, bytes, kCrcOffset);
    if (reserved_nonzero_) {
      // Only a corrupted file (caught here) or a newer writer sets them.
      GMM_ASSIGN_OR_RETURN(const uint32_t crc, CrcOfPayload(header.payload_bytes));
      if (crc != header.crc) return ChecksumMismatch(header.crc, crc);
      return Error(absl::InvalidArgumentError, "reserved header bytes are not zero");
    }
    return header;
  }

  absl::Status ReadArray(void* out, size_t bytes, uint32_t* crc) {
    if (!source_.Read(out, bytes)) return Truncated(file_bytes_ + 1);
    *crc = Crc(*crc, out, bytes);
    return absl::OkStatus();
  }

  // crc32 of header and payload without keeping the payload.
  absl::StatusOr<uint32_t> CrcOfPayload(uint64_t payload_bytes) {
    uint32_t crc = crc_of_header_;
    std::vector<char> chunk(1 << 20);
    while (payload_bytes > 0) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(payload_bytes, chunk.size()));
      if (!source_.Read(chunk.data(), take)) return Truncated(file_bytes_ + 1);
      crc = Crc(crc, chunk.data(), take);
      payload_bytes -= take;
    }
    return crc;
  }

  ByteSource& source_;
  const int64_t file_bytes_;
  const std::string name_;
  uint32_t crc_of_header_ = 0;
  bool reserved_nonzero_ = false;
};

}  // namespace

bool LooksLikeNativeModel(absl::string_view prefix) {
  return prefix.size() >= sizeof(kNativeModelMagic) &&
         std::memcmp(prefix.data(), kNativeModelMagic, sizeof(kNativeModelMagic)) == 0;
}

std::string EncodeNativeModel(const DiagGmmModel& model) {
  const auto offsets = model.state_offsets();
  const auto center = model.center();
  const ConstMatrixView params = model.params();
  const size_t offsets_bytes = offsets.size() * sizeof(int64_t);
  const size_t center_bytes = center.size() * sizeof(float);
  const size_t params_bytes = static_cast<size_t>(params.rows * params.cols) * sizeof(float);
  const uint64_t payload_bytes = offsets_bytes + center_bytes + params_bytes;

  std::string file(kNativeModelHeaderBytes + payload_bytes, '\0');
  char* out = file.data();
  std::memcpy(out, kNativeModelMagic, sizeof(kNativeModelMagic));
  Store<uint32_t>(kNativeModelVersion, 8, out);
  Store<uint32_t>(kNativeModelHeaderBytes, 12, out);
  Store<int32_t>(model.dim(), 16, out);
  Store<int32_t>(model.num_states(), 20, out);
  Store<int64_t>(model.num_gaussians(), 24, out);
  Store<uint64_t>(payload_bytes, 32, out);
  char* payload = out + kNativeModelHeaderBytes;
  std::memcpy(payload, offsets.data(), offsets_bytes);
  std::memcpy(payload + offsets_bytes, center.data(), center_bytes);
  std::memcpy(payload + offsets_bytes + center_bytes, params.data, params_bytes);
  uint32_t crc = Crc(0, out, kCrcOffset);
  crc = Crc(crc, payload, payload_bytes);
  Store<uint32_t>(crc, kCrcOffset, out);
  return file;
}

absl::StatusOr<DiagGmmModel> DecodeNativeModel(absl::string_view bytes,
                                               absl::string_view source_name) {
  MemorySource source(bytes);
  return Decoder(source, static_cast<int64_t>(bytes.size()), source_name).Decode();
}

absl::StatusOr<DiagGmmModel> ReadNativeModel(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_internal::ErrnoStatus(errno, "open model file", path);
  FileSource source(fd, path);
  struct stat info;
  if (::fstat(fd, &info) != 0) return io_internal::ErrnoStatus(errno, "stat model file", path);
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("model file '", path, "' is not a regular file"));
  }
  return Decoder(source, static_cast<int64_t>(info.st_size), path).Decode();
}

absl::Status WriteNativeModel(const DiagGmmModel& model, const std::string& path) {
  return io_internal::WriteFileAtomically(path, EncodeNativeModel(model));
}

}  // namespace gmmscore
