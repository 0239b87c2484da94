#include "tests/align_test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/backends/backend_factory.h"
#include "kernels/frontend/sphinx_front_end.h"
#include "kernels/hmm/sphinx_aligner.h"
#include "kernels/io/transcripts.h"
#include "proto/wire_convert.h"
#include "server/log.h"
#include "tests/test_daemon.h"

namespace gmmscore {
namespace {

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string CompareSegments(const char* what,
                            const google::protobuf::RepeatedPtrField<v1::AlignSegment>& got,
                            const std::vector<AlignedSegment>& expected) {
  if (got.size() != static_cast<int>(expected.size())) {
    return absl::StrCat(what, ": ", got.size(), " segments, expected ", expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const v1::AlignSegment& g = got[static_cast<int>(i)];
    const AlignedSegment& e = expected[i];
    if (g.label() != e.label || g.word_index() != e.word || g.filler() != (e.word < 0) ||
        g.first_frame() != e.first_frame || g.num_frames() != e.num_frames ||
        std::abs(g.start_seconds() - e.first_frame * 0.01) > 1e-9 ||
        std::abs(g.duration_seconds() - e.num_frames * 0.01) > 1e-9) {
      return absl::StrCat(what, " ", i, ": got ", g.label(), " word ", g.word_index(), " frames ", g.first_frame(),
                          "+", g.num_frames(), ", expected ", e.label, " word ", e.word, " frames ", e.first_frame,
                          "+", e.num_frames);
    }
  }
  return "";
}

}  // namespace

bool HaveAlignData() { return Exists(kEnUsModel) && Exists(kEnUsDict) && Exists(kLibrivox); }

std::vector<Utterance> LoadLibrivox() {
  std::vector<Utterance> out;
  auto transcripts = ReadTranscripts(kLibrivox + "/transcription");
  EXPECT_TRUE(transcripts.ok()) << transcripts.status();
  auto pipeline = FeaturePipelineForModel(kEnUsModel);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  if (!transcripts.ok() || !pipeline.ok()) return out;
  for (const Transcript& t : *transcripts) {
    Utterance u{.id = t.utterance, .words = t.words, .wav_path = absl::StrCat(kLibrivox, "/", t.utterance, ".wav")};
    auto audio = ReadSpeechFile(u.wav_path, 16000);
    EXPECT_TRUE(audio.ok()) << audio.status();
    if (!audio.ok()) continue;
    u.audio = *std::move(audio);
    auto features = ComputeFeatures(u.audio, *pipeline, u.wav_path);
    EXPECT_TRUE(features.ok()) << features.status();
    if (!features.ok()) continue;
    u.features = *std::move(features);
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<absl::StatusOr<Alignment>> AlignOffline(const std::vector<Utterance>& speech) {
  auto backend = CreateBackend(TestBackendName());
  EXPECT_TRUE(backend.ok()) << backend.status();
  auto aligner = SphinxAligner::Create(kEnUsModel, kEnUsDict, backend->get());
  EXPECT_TRUE(aligner.ok()) << aligner.status();
  if (!aligner.ok()) return {};
  std::vector<AlignInput> batch;
  for (const Utterance& u : speech) batch.push_back({u.id, u.features.view(), u.words});
  return (*aligner)->Align(batch);
}

AlignRepository::AlignRepository() {
  SetInfoLogging(false);
  directory_ = (std::filesystem::temp_directory_path() /
                absl::StrCat("gmmscore_align_repo_", ::getpid(), "_", reinterpret_cast<uintptr_t>(this)))
                   .string();
  std::filesystem::create_directories(directory_);
  std::filesystem::create_directory_symlink(kEnUsModel, std::filesystem::path(directory_) / "en-us");
  std::filesystem::create_directory_symlink(kEnUsModel, std::filesystem::path(directory_) / "en-us-nodict");
}

AlignRepository::~AlignRepository() {
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

RepositoryOptions AlignRepository::Options() const {
  RepositoryOptions options;
  options.align.per_model["en-us"] = kEnUsDict;
  options.align.aligner.threads = 2;
  return options;
}

std::unique_ptr<Daemon> AlignRepository::StartDaemon(DaemonOptions options, const TestDevices& devices) const {
  std::vector<std::unique_ptr<ScoringBackend>> backends = MakeTestBackends(devices);
  if (backends.empty()) return nullptr;
  std::vector<ScoringBackend*> pointers;
  for (const auto& backend : backends) pointers.push_back(backend.get());
  RepositoryOptions repository_options = Options();
  repository_options.placement = devices.placement;
  auto repository = ModelRepository::LoadDirectory(directory_, pointers, repository_options);
  if (!repository.ok()) {
    ADD_FAILURE() << repository.status();
    return nullptr;
  }
  options.listen_address = "127.0.0.1:0";
  auto daemon = Daemon::Start(std::move(backends), *std::move(repository), options);
  if (!daemon.ok()) {
    ADD_FAILURE() << daemon.status();
    return nullptr;
  }
  return *std::move(daemon);
}

v1::AlignRequest FeaturesRequest(const std::string& model, const Utterance& utterance, bool phones) {
  v1::AlignRequest request;
  request.set_model(model);
  request.set_utterance_id(utterance.id);
  for (const std::string& word : utterance.words) request.add_words(word);
  FeaturesToProto(utterance.features.view(), request.mutable_features());
  request.set_phones(phones);
  return request;
}

v1::AlignRequest AudioRequest(const std::string& model, const Utterance& utterance, bool phones) {
  v1::AlignRequest request = FeaturesRequest(model, utterance, phones);
  PcmToProto(utterance.audio.samples, utterance.audio.sample_rate, request.mutable_audio());
  return request;
}

std::string CompareAlignment(const v1::AlignResponse& response, const Alignment& expected, bool phones) {
  if (std::string diff = CompareSegments("word", response.words(), expected.words); !diff.empty()) return diff;
  if (phones) {
    if (std::string diff = CompareSegments("phone", response.phones(), expected.phones); !diff.empty()) return diff;
  } else if (response.phones_size() != 0) {
    return "phones sent though not asked for";
  }
  if (response.num_frames() != expected.senones.size()) {
    return absl::StrCat(response.num_frames(), " frames, expected ", expected.senones.size());
  }
  if (response.frame_seconds() != 0.01) return absl::StrCat("frame_seconds ", response.frame_seconds());
  if (std::abs(response.log_likelihood() - expected.log_likelihood) > 1e-9 * std::abs(expected.log_likelihood)) {
    return absl::StrCat("log likelihood ", response.log_likelihood(), ", expected ", expected.log_likelihood);
  }
  return "";
}

}  // namespace gmmscore
