// Real speech for the alignment and Baum-Welch tests: transcripts and WAVs
// of pocketsphinx-testdata through a Sphinx model's front end.
//
//   const SphinxTestCorpus cards = LoadSphinxTestCorpus(model, root + "/test/data/cards/cards.transcription",
//                                                       root + "/test/data/cards");
//   aligner->Align(cards.inputs);
#ifndef GMMSCORE_KERNELS_HMM_SPHINX_TEST_CORPUS_H_
#define GMMSCORE_KERNELS_HMM_SPHINX_TEST_CORPUS_H_

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/transcripts.h"
#include "kernels/io/wav_reader.h"

namespace gmmscore {

// Debian's /usr/share/pocketsphinx, or the copy GMMSCORE_POCKETSPHINX_ROOT
// names (the GPU machine's bundle).
inline std::string PocketsphinxRoot() {
  const char* root = std::getenv("GMMSCORE_POCKETSPHINX_ROOT");
  return root != nullptr ? root : "/usr/share/pocketsphinx";
}

inline bool PathExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

struct SphinxTestCorpus {
  std::vector<Transcript> transcripts;
  std::vector<FloatMatrix> features;  // `inputs` views these
  std::vector<AlignInput> inputs;
};

// Every transcript's <wav_dir>/<utterance>.wav through `model_dir`'s front
// end; test failures (not crashes) when something cannot be read.
inline SphinxTestCorpus LoadSphinxTestCorpus(const std::string& model_dir, const std::string& transcripts,
                                             const std::string& wav_dir) {
  SphinxTestCorpus corpus;
  absl::StatusOr<std::vector<Transcript>> all = ReadTranscripts(transcripts);
  absl::StatusOr<FeaturePipeline> pipeline = FeaturePipelineForModel(model_dir);
  EXPECT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  if (!all.ok() || !pipeline.ok()) return corpus;
  for (const Transcript& t : *all) {
    const std::string wav = absl::StrCat(wav_dir, "/", t.utterance, ".wav");
    absl::StatusOr<PcmAudio> audio = ReadSpeechFile(wav, 16000);
    absl::StatusOr<FloatMatrix> features =
        audio.ok() ? ComputeFeatures(*audio, *pipeline, wav) : absl::StatusOr<FloatMatrix>(audio.status());
    EXPECT_TRUE(features.ok()) << features.status();
    if (!features.ok()) continue;
    corpus.transcripts.push_back(t);
    corpus.features.push_back(*std::move(features));
  }
  for (size_t u = 0; u < corpus.features.size(); ++u) {
    corpus.inputs.push_back({corpus.transcripts[u].utterance, corpus.features[u].view(), corpus.transcripts[u].words});
  }
  return corpus;
}

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_SPHINX_TEST_CORPUS_H_
