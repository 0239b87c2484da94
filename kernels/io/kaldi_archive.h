// Kaldi archives of one holder type, read one entry at a time and written
// byte for byte: the shared machinery of kaldi_int_vector_archive.h,
// kaldi_posterior_archive.h and kaldi_text_table.h, which define the holders.
//
//   GMM_ASSIGN_OR_RETURN(auto reader, KaldiIntVectorArchiveReader::Open("ark:ali.ark"));
//   while (true) {
//     GMM_ASSIGN_OR_RETURN(bool more, reader->Next());
//     if (!more) break;
//     Use(reader->key(), reader->value());
//   }
//
// A Holder (as Kaldi's holders) says how one object is read and written:
//   using Value = ...;
//   static absl::Status Read(io_internal::KaldiArchiveInput& in, Value* value);
//   static void Append(const Value& value, bool text, std::string* out);
// Read sees the object after "KEY " (and "\0B" when in.binary()); Append
// writes it after them. An archive may mix text and binary entries.
// Specifiers: kaldi_specifier.h ("ark:FILE", "ark,t:FILE", "ark:-").
//
// Errors name the archive, the key and the byte offset (binary) or line
// (text): NOT_FOUND for a missing file, DATA_LOSS when the input ends inside
// an entry, INVALID_ARGUMENT for malformed content or, writing, a key that is
// not a Kaldi token. Values are returned as written: checking ids against a
// model is the caller's job.
//
// Thread safety: a reader is used by one thread at a time; the functions are
// reentrant.
#ifndef GMMSCORE_KERNELS_IO_KALDI_ARCHIVE_H_
#define GMMSCORE_KERNELS_IO_KALDI_ARCHIVE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/internal/kaldi_archive_io.h"
#include "kernels/io/kaldi_specifier.h"

namespace gmmscore {

template <typename Value>
struct KaldiArchiveEntry {
  std::string key;
  Value value;
};

// Streams the entries of one archive, in file order.
template <typename Holder>
class KaldiArchiveReader {
 public:
  using Value = typename Holder::Value;

  // Parses the rspecifier and opens the file (nothing is read yet).
  static absl::StatusOr<std::unique_ptr<KaldiArchiveReader>> Open(absl::string_view rspecifier) {
    GMM_ASSIGN_OR_RETURN(std::unique_ptr<io_internal::KaldiArchiveInput> in,
                         io_internal::KaldiArchiveInput::Open(rspecifier));
    return FromInput(std::move(in));
  }
  // Reads an archive held in memory; `name` stands for the file in messages.
  static std::unique_ptr<KaldiArchiveReader> FromString(std::string data, std::string name) {
    return FromInput(io_internal::KaldiArchiveInput::FromString(std::move(data), std::move(name)));
  }
  static std::unique_ptr<KaldiArchiveReader> FromInput(std::unique_ptr<io_internal::KaldiArchiveInput> in) {
    return std::unique_ptr<KaldiArchiveReader>(new KaldiArchiveReader(std::move(in)));
  }

  // Reads the next entry: true when key() and value() hold it, false at the
  // clean end, an error otherwise (and the same error on every later call).
  absl::StatusOr<bool> Next() {
    return in_->Next([this](io_internal::KaldiArchiveInput& in) { return Holder::Read(in, &value_); });
  }

  // The current entry; valid after Next() returned true, until the next call.
  const std::string& key() const { return in_->key(); }
  const Value& value() const { return value_; }
  Value& mutable_value() { return value_; }
  // Byte offset at which the current entry's key starts.
  int64_t entry_offset() const { return in_->entry_offset(); }
  // The file name, or "standard input".
  const std::string& source_name() const { return in_->name(); }

 private:
  explicit KaldiArchiveReader(std::unique_ptr<io_internal::KaldiArchiveInput> in) : in_(std::move(in)) {}

  std::unique_ptr<io_internal::KaldiArchiveInput> in_;
  Value value_{};
};

// Every entry of the archive, in file order (keys may repeat, as in Kaldi).
template <typename Holder>
absl::StatusOr<std::vector<KaldiArchiveEntry<typename Holder::Value>>> ReadAllFrom(
    KaldiArchiveReader<Holder>& reader) {
  std::vector<KaldiArchiveEntry<typename Holder::Value>> entries;
  while (true) {
    GMM_ASSIGN_OR_RETURN(const bool more, reader.Next());
    if (!more) return entries;
    entries.push_back({reader.key(), std::move(reader.mutable_value())});
  }
}

template <typename Holder>
absl::StatusOr<std::vector<KaldiArchiveEntry<typename Holder::Value>>> ReadKaldiArchive(
    absl::string_view rspecifier) {
  GMM_ASSIGN_OR_RETURN(std::unique_ptr<KaldiArchiveReader<Holder>> reader,
                       KaldiArchiveReader<Holder>::Open(rspecifier));
  return ReadAllFrom(*reader);
}

// Appends one entry, "KEY " then the object, binary ("\0B" first) or text.
template <typename Holder>
absl::Status AppendKaldiArchiveEntry(absl::string_view key, const typename Holder::Value& value, bool text,
                                     std::string* out) {
  GMM_RETURN_IF_ERROR(io_internal::AppendArchiveKey(key, text, out));
  Holder::Append(value, text, out);
  return absl::OkStatus();
}

// Writes all `entries` to the archive named by `wspecifier` (binary unless
// it has ",t"), atomically; "ark:-" is standard output.
template <typename Holder>
absl::Status WriteKaldiArchive(absl::string_view wspecifier,
                               absl::Span<const KaldiArchiveEntry<typename Holder::Value>> entries) {
  GMM_ASSIGN_OR_RETURN(const ArchiveSpecifier spec, ParseArchiveWspecifier(wspecifier));
  std::string bytes;
  for (const auto& entry : entries) {
    GMM_RETURN_IF_ERROR(AppendKaldiArchiveEntry<Holder>(entry.key, entry.value, spec.text, &bytes));
  }
  return io_internal::WriteArchiveBytes(spec.path, bytes);
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_ARCHIVE_H_
