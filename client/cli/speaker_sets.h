// Speakers from Kaldi's spk2utt (`spk utt1 utt2 ...` lines), for the
// commands that adapt per speaker (adapt-map, est-fmllr).
//
//   std::vector<std::string> speakers;  std::map<std::string, int> speaker_of;
//   GMM_RETURN_IF_ERROR(ReadSpeakers("ark:spk2utt", &speakers, &speaker_of));
#ifndef GMMSCORE_CLIENT_CLI_SPEAKER_SETS_H_
#define GMMSCORE_CLIENT_CLI_SPEAKER_SETS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gmmscore::cli {

// Speakers in spk2utt order, and each utterance's speaker index.
// INVALID_ARGUMENT for an utterance of two speakers or no speakers at all;
// the table reader's errors.
absl::Status ReadSpeakers(const std::string& spk2utt, std::vector<std::string>* speakers,
                          std::map<std::string, int>* sets);

}  // namespace gmmscore::cli

#endif  // GMMSCORE_CLIENT_CLI_SPEAKER_SETS_H_
