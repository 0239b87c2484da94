// Transcripts of utterances, in either of the two formats aligners read:
//   Sphinx   "<s> words ... </s> (uttid)"   (the <s>, </s> optional)
//   Kaldi    "uttid words ..."              (a `text` file)
// A line is Sphinx's when its last token is "(...)"; a file may not mix
// the two. <s>, </s> and <sil> are dropped from the words: the aligner puts
// silence where the audio has it.
//
//   GMM_ASSIGN_OR_RETURN(std::vector<Transcript> all, ReadTranscripts("librivox/transcription"));
//
// Errors: INVALID_ARGUMENT naming the file and line for an utterance id seen
// twice, a line without one, or mixed formats; NOT_FOUND for a missing file.
// An utterance with no words is returned (empty `words`): whether that is
// an error is the aligner's decision, per utterance.
#ifndef GMMSCORE_KERNELS_IO_TRANSCRIPTS_H_
#define GMMSCORE_KERNELS_IO_TRANSCRIPTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

struct Transcript {
  std::string utterance;
  std::vector<std::string> words;
};

absl::StatusOr<std::vector<Transcript>> ParseTranscripts(absl::string_view text, const std::string& name);
absl::StatusOr<std::vector<Transcript>> ReadTranscripts(const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_TRANSCRIPTS_H_
