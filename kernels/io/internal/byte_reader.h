// ByteReader: a cursor over a file held in memory that reads fixed-size
// integers and floats in a chosen byte order and reports, on failure, the
// file and the byte offset. Internal to kernels/io.
//
//   ByteReader in(contents, "Sphinx means file 'means'", /*big_endian=*/false);
//   GMM_ASSIGN_OR_RETURN(int32_t count, in.ReadInt32("the codebook count"));
//
// Truncation is DATA_LOSS ("... ends at byte N while reading X (truncated?)");
// Error() makes INVALID_ARGUMENT messages in the same form. Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_BYTE_READER_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_BYTE_READER_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmmscore::io_internal {

class ByteReader {
 public:
  // `what` names the file in messages, e.g. "Sphinx means file 'x/means'".
  ByteReader(absl::string_view bytes, std::string what, bool big_endian)
      : bytes_(bytes), what_(std::move(what)), swap_(big_endian != (std::endian::native == std::endian::big)) {}

  int64_t offset() const { return pos_; }
  int64_t remaining() const { return static_cast<int64_t>(bytes_.size()) - pos_; }
  bool at_end() const { return remaining() == 0; }
  void set_big_endian(bool big_endian) { swap_ = big_endian != (std::endian::native == std::endian::big); }
  bool swapping() const { return swap_; }
  const std::string& what() const { return what_; }

  absl::Status Error(absl::string_view problem) const { return ErrorAt(pos_, problem); }
  absl::Status ErrorAt(int64_t offset, absl::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(what_, ", byte offset ", offset, ": ", problem));
  }
  absl::Status Truncated(absl::string_view reading) const {
    return absl::DataLossError(absl::StrCat(what_, " ends at byte ", bytes_.size(), " while reading ",
                                            reading, " (truncated?)"));
  }

  // Checks that `count` more bytes are there (DATA_LOSS otherwise).
  absl::Status Need(int64_t count, absl::string_view reading) const {
    if (count < 0 || count > remaining()) return Truncated(reading);
    return absl::OkStatus();
  }

  absl::StatusOr<absl::string_view> ReadBytes(int64_t count, absl::string_view reading) {
    if (absl::Status s = Need(count, reading); !s.ok()) return s;
    const absl::string_view out = bytes_.substr(pos_, count);
    pos_ += count;
    return out;
  }
  absl::Status Skip(int64_t count, absl::string_view reading) {
    if (absl::Status s = Need(count, reading); !s.ok()) return s;
    pos_ += count;
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view reading) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
    if (absl::Status s = Need(sizeof(T), reading); !s.ok()) return s;
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    if (swap_) value = Swap(value);
    return value;
  }
  absl::StatusOr<int32_t> ReadInt32(absl::string_view reading) { return Read<int32_t>(reading); }

  // `count` values of T into *out (resized).
  template <typename T>
  absl::Status ReadArray(int64_t count, absl::string_view reading, std::vector<T>* out) {
    if (count < 0 || count > remaining() / static_cast<int64_t>(sizeof(T))) return Truncated(reading);
    out->resize(static_cast<size_t>(count));
    if (count > 0) std::memcpy(out->data(), bytes_.data() + pos_, count * sizeof(T));
    pos_ += count * static_cast<int64_t>(sizeof(T));
    if (swap_) {
      for (T& v : *out) v = Swap(v);
    }
    return absl::OkStatus();
  }

  template <typename T>
  static T Swap(T value) {
    if constexpr (sizeof(T) == 1) {
      return value;
    } else {
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &value, sizeof(T));
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
      std::memcpy(&value, bytes, sizeof(T));
      return value;
    }
  }

 private:
  absl::string_view bytes_;
  std::string what_;
  bool swap_;
  int64_t pos_ = 0;
};

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_BYTE_READER_H_
