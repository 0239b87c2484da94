#include "client/cli/speaker_sets.h"

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/kaldi_text_table.h"

namespace gmmscore::cli {

absl::Status ReadSpeakers(const std::string& spk2utt, std::vector<std::string>* speakers,
                          std::map<std::string, int>* sets) {
  GMM_ASSIGN_OR_RETURN(const auto entries, ReadKaldiTokenListTable(spk2utt));
  for (const KaldiTokenListEntry& entry : entries) {
    const int set = static_cast<int>(speakers->size());
    speakers->push_back(entry.key);
    for (const std::string& utt : entry.value) {
      if (!sets->emplace(utt, set).second) {
        return absl::InvalidArgumentError(absl::StrCat(spk2utt, ": utterance '", utt, "' has two speakers"));
      }
    }
  }
  if (speakers->empty()) return absl::InvalidArgumentError(absl::StrCat(spk2utt, " names no speakers"));
  return absl::OkStatus();
}

}  // namespace gmmscore::cli
