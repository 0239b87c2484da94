// A pronunciation dictionary in CMU Sphinx's (cmudict) format, and a
// model's filler dictionary (noisedict), which has the same lines.
//
//   GMM_ASSIGN_OR_RETURN(PronunciationDictionary dict,
//                        ReadPronunciationDictionary("/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"));
//   const auto* prons = dict.Find("the");   // {{"DH", "AH"}, {"DH", "IY"}}
//
// Lines are "word PHONE PHONE ...". Alternatives are "word(2) ...",
// "word(3) ..." in any order after the first; they join the word's list in
// file order. Blank lines and lines starting with ";;;" or "#" are skipped;
// a "#" after the phones starts a comment (cmudict's "# place, name" notes).
// Words are looked up exactly, then lowercased (cmudict's are lowercase,
// transcripts may not be).
//
// Errors: INVALID_ARGUMENT naming the file and line for a word without
// phones or a bad "(n)" suffix; NOT_FOUND when the file is missing.
// Thread safety: immutable after construction.
#ifndef GMMSCORE_KERNELS_IO_PRONUNCIATION_DICTIONARY_H_
#define GMMSCORE_KERNELS_IO_PRONUNCIATION_DICTIONARY_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmmscore {

using Pronunciation = std::vector<std::string>;  // phone names

class PronunciationDictionary {
 public:
  // The word's pronunciations in file order, or null when it has none.
  const std::vector<Pronunciation>* Find(absl::string_view word) const;
  int64_t num_words() const { return static_cast<int64_t>(words_.size()); }
  // Every word, for callers that walk the dictionary (fillers).
  const std::unordered_map<std::string, std::vector<Pronunciation>>& words() const { return words_; }

  void Add(std::string word, Pronunciation phones) { words_[std::move(word)].push_back(std::move(phones)); }

 private:
  std::unordered_map<std::string, std::vector<Pronunciation>> words_;
};

absl::StatusOr<PronunciationDictionary> ParsePronunciationDictionary(absl::string_view text, const std::string& name);
absl::StatusOr<PronunciationDictionary> ReadPronunciationDictionary(const std::string& path);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_IO_PRONUNCIATION_DICTIONARY_H_
