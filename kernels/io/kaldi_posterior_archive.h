// Kaldi posterior archives (post.ark: ali-to-post, weight-silence-post,
// gmm-acc-stats reads them), one KaldiPosterior an utterance: for each frame
// a list of (id, weight) pairs, the id a transition-id or pdf-id as the
// producing tool chose. Read one entry at a time and written byte for byte as
// Kaldi's TableWriter<PosteriorHolder> (WritePosterior) writes them.
// Machinery and errors: kaldi_archive.h.
//
//   GMM_ASSIGN_OR_RETURN(auto reader, KaldiPosteriorArchiveReader::Open("ark:post.ark"));
//   std::string bytes;
//   GMM_RETURN_IF_ERROR(AppendKaldiPosteriorEntry("utt1", posterior, /*text=*/true, &bytes));
//
// Entry formats:
//   text:   KEY " [ 12 0.6 13 0.4 ] [ 5 1 ] \n": each frame "[ ", each pair
//           "id weight ", "] "; a newline ends the utterance ("KEY \n" when
//           it has no frames, "[ ] " for a frame without pairs). Weights are
//           printed as "%.7g" (Kaldi's output precision). Reading takes the
//           rest of the line and, as Kaldi, lets "]" follow a weight directly.
//   binary: KEY " \0B", the frame count, then per frame the pair count and
//           per pair the id, all int32 basic types (the byte 4 and four
//           little-endian bytes), and the weight as a float basic type (the
//           byte 4 and a float32; the byte 8 and a float64 is read too).
// Frame counts over 10^7 (Kaldi's limit) or negative are INVALID_ARGUMENT, as
// are ids that are not int32s and weights that are not numbers.
#ifndef GMMSCORE_KERNELS_IO_KALDI_POSTERIOR_ARCHIVE_H_
#define GMMSCORE_KERNELS_IO_KALDI_POSTERIOR_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/io/kaldi_archive.h"

namespace gmmscore {

// Kaldi's Posterior: posterior[t] holds frame t's (id, weight) pairs.
using KaldiPosterior = std::vector<std::vector<std::pair<int32_t, float>>>;

// Kaldi's PosteriorHolder.
struct KaldiPosteriorHolder {
  using Value = KaldiPosterior;
  static absl::Status Read(io_internal::KaldiArchiveInput& in, Value* value);
  static void Append(const Value& value, bool text, std::string* out);
};

using KaldiPosteriorArchiveReader = KaldiArchiveReader<KaldiPosteriorHolder>;
using KaldiPosteriorEntry = KaldiArchiveEntry<KaldiPosterior>;

// ReadKaldiArchive, AppendKaldiArchiveEntry and WriteKaldiArchive
// (kaldi_archive.h) for this holder.
inline absl::StatusOr<std::vector<KaldiPosteriorEntry>> ReadKaldiPosteriorArchive(absl::string_view rspecifier) {
  return ReadKaldiArchive<KaldiPosteriorHolder>(rspecifier);
}
inline absl::Status AppendKaldiPosteriorEntry(absl::string_view key, const KaldiPosterior& posterior, bool text,
                                              std::string* out) {
  return AppendKaldiArchiveEntry<KaldiPosteriorHolder>(key, posterior, text, out);
}
inline absl::Status WriteKaldiPosteriorArchive(absl::string_view wspecifier,
                                               absl::Span<const KaldiPosteriorEntry> entries) {
  return WriteKaldiArchive<KaldiPosteriorHolder>(wspecifier, entries);
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_KALDI_POSTERIOR_ARCHIVE_H_
