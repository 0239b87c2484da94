// The framing of a Kaldi archive of holder objects (alignments, posteriors,
// token lists), read one entry at a time, and its writing side. Internal to
// kernels/io; kaldi_archive.h builds the public readers on it.
//
//   in->Next([&](KaldiArchiveInput& in) -> absl::Status {
//     if (!in.binary()) return ParseLine(in.ReadLine(), value);
//     GMM_ASSIGN_OR_RETURN(int32_t size, in.ReadInt32("the size"));
//     ...
//   });
//
// An entry is KEY (a run of non-whitespace bytes), one space or tab (a
// newline is left for the object, as Kaldi's reader allows), then the object:
// "\0B" and its binary form, or text, which Kaldi's holders read up to the
// end of the line. Binary basic types are a size byte and little-endian
// bytes (kaldi_binary.h).
//
// Errors: "archive 'F', entry 'K' (byte offset N): ..." for binary objects,
// "(line N)" for text ones: DATA_LOSS when the input ends inside an entry,
// INVALID_ARGUMENT for malformed content, NOT_FOUND and other errno codes
// when the file cannot be opened. Not thread-safe.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_ARCHIVE_IO_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_ARCHIVE_IO_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/io/internal/input_stream.h"

namespace gmmscore::io_internal {

class KaldiArchiveInput {
 public:
  // "ark:FILE" (kaldi_specifier.h); "-" is standard input.
  static absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> Open(absl::string_view rspecifier);
  // A plain file name ("-": standard input).
  static absl::StatusOr<std::unique_ptr<KaldiArchiveInput>> OpenFile(const std::string& path);
  // An archive held in memory; `name` stands for the file in messages.
  static std::unique_ptr<KaldiArchiveInput> FromString(std::string data, std::string name);

  // Reads the next key, then calls `read_object` to read its object: true
  // when it did, false at the clean end of the archive. After an error every
  // later call returns the same error.
  absl::StatusOr<bool> Next(absl::FunctionRef<absl::Status(KaldiArchiveInput&)> read_object);

  const std::string& key() const { return key_; }
  // Whether the current object starts with "\0B" (already consumed).
  bool binary() const { return binary_; }
  // Byte offset at which the current entry's key starts.
  int64_t entry_offset() const { return entry_offset_; }
  // The file name, or "standard input".
  const std::string& name() const { return in_->name(); }

  // Binary objects: an int32 (size byte 4) and a float (size byte 4, or 8
  // for a double, which is converted).
  absl::StatusOr<int32_t> ReadInt32(absl::string_view what);
  absl::StatusOr<float> ReadFloat(absl::string_view what);
  // Bytes left when the total is known; for rejecting damaged counts.
  std::optional<int64_t> remaining() const { return in_->remaining(); }
  // Text objects: the rest of the line; the newline is consumed.
  std::string ReadLine();

  // An error of `code` naming the archive, the key and the position.
  absl::Status Error(absl::StatusCode code, absl::string_view what) const;

 private:
  explicit KaldiArchiveInput(std::unique_ptr<InputStream> in) : in_(std::move(in)) {}
  absl::Status ReadKey();
  // Reads a basic type of `size` bytes whose size byte is `size`.
  absl::Status ReadBasic(absl::string_view what, int size, void* value);

  std::unique_ptr<InputStream> in_;
  std::string key_;
  bool binary_ = false;
  int64_t entry_offset_ = 0;
  absl::Status error_;
};

// An int32 written as text, as Kaldi's `is >> int32` takes it: an optional
// sign, then decimal digits; nullopt otherwise or out of range.
std::optional<int32_t> ParseTextInt32(absl::string_view token);

// Kaldi's IsToken: non-empty, no whitespace or ASCII control bytes (bytes
// 0x80-0xfe, e.g. UTF-8, are allowed).
bool IsKaldiToken(absl::string_view token);

// Appends "KEY " and, for binary, the "\0B" header. INVALID_ARGUMENT when
// `key` is not a Kaldi token.
absl::Status AppendArchiveKey(absl::string_view key, bool text, std::string* out);

// Writes a whole archive's bytes to `path` atomically, or to standard output
// for "-". Errno-derived codes on failure.
absl::Status WriteArchiveBytes(const std::string& path, absl::string_view bytes);

}  // namespace gmmscore::io_internal

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_ARCHIVE_IO_H_
