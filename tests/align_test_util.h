// Forced alignment through gmmscored on real speech: Debian's pocketsphinx
// en-us model and cmudict, and pocketsphinx's librivox recordings with
// their transcripts (tools/install_deps.sh installs them; tests skip
// without them).
//
//   if (!HaveAlignData()) GTEST_SKIP() << ...;
//   AlignRepository repository;   // DIR/en-us (with cmudict), DIR/en-us-nodict
//   auto daemon = repository.StartDaemon({});
//   std::vector<Utterance> speech = LoadLibrivox();
//   std::vector<absl::StatusOr<Alignment>> offline = AlignOffline(speech);
#ifndef GMMSCORE_TESTS_ALIGN_TEST_UTIL_H_
#define GMMSCORE_TESTS_ALIGN_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"
#include "kernels/core/matrix.h"
#include "kernels/hmm/alignment.h"
#include "kernels/io/wav_reader.h"
#include "server/daemon.h"
#include "tests/test_daemon.h"

namespace gmmscore {

inline const std::string kEnUsModel = "/usr/share/pocketsphinx/model/en-us/en-us";
inline const std::string kEnUsDict = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
inline const std::string kLibrivox = "/usr/share/pocketsphinx/test/data/librivox";

// Whether the model, dictionary and speech are installed.
bool HaveAlignData();

struct Utterance {
  std::string id;
  std::vector<std::string> words;
  std::string wav_path;
  PcmAudio audio;        // 16 kHz
  FloatMatrix features;  // the model's (ComputeFeatures with its feat.params)
};

// The five librivox utterances, in transcript order. Fails the test on error.
std::vector<Utterance> LoadLibrivox();

// The offline engine's alignments of `speech` (its features), on a backend
// of the test daemon's kind, as one batch.
std::vector<absl::StatusOr<Alignment>> AlignOffline(const std::vector<Utterance>& speech);

// A model repository directory with the en-us model twice: "en-us", which
// aligns with cmudict (its ModelConfig-style dictionary), and
// "en-us-nodict", which has no dictionary. Removed by the destructor.
class AlignRepository {
 public:
  AlignRepository();
  ~AlignRepository();
  AlignRepository(const AlignRepository&) = delete;
  AlignRepository& operator=(const AlignRepository&) = delete;

  const std::string& directory() const { return directory_; }
  // The repository options that give "en-us" its dictionary.
  RepositoryOptions Options() const;
  // A daemon on 127.0.0.1:<free port> serving the directory on the test
  // backend, on `devices` (test_daemon.h: count, placement and wrapping).
  // Fails the test and returns null on error.
  std::unique_ptr<Daemon> StartDaemon(DaemonOptions options, const TestDevices& devices = {}) const;

 private:
  std::string directory_;
};

// An Align request for `utterance`: its features, or (audio) its PCM16.
v1::AlignRequest FeaturesRequest(const std::string& model, const Utterance& utterance, bool phones = false);
v1::AlignRequest AudioRequest(const std::string& model, const Utterance& utterance, bool phones = false);

// Empty when `response` holds exactly `expected`'s segments (words with
// their filler flag and word index, phones when asked, frames and seconds at
// 10 ms) and likelihood; otherwise what differs.
std::string CompareAlignment(const v1::AlignResponse& response, const Alignment& expected, bool phones);

}  // namespace gmmscore

#endif  // GMMSCORE_TESTS_ALIGN_TEST_UTIL_H_
